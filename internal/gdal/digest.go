package gdal

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// outputDigests hashes a finished output file while the fidelity check
// decodes it, so that the pipeline does not read it again afterwards
// (recipe.Output.SHA256, MD5). The file is mapped a window at a time, not
// read: the hashes take its bytes from the page cache without a copy, in
// parallel, and the mapped window (not the file) is what counts towards
// the process's resident set.
type outputDigests struct {
	done        chan struct{}
	sha256, md5 string
	err         error
}

// digestWindow is how much of the file is mapped at once.
const digestWindow = 32 << 20

// digestOutput starts hashing path: SHA-256 always, MD5 when withMD5.
func digestOutput(ctx context.Context, path string, withMD5 bool) *outputDigests {
	d := &outputDigests{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.sha256, d.md5, d.err = digestFile(ctx, path, withMD5)
	}()
	return d
}

// wait returns the digests once both are taken.
func (d *outputDigests) wait() (sha, md5sum string, err error) {
	<-d.done
	return d.sha256, d.md5, d.err
}

func digestFile(ctx context.Context, path string, withMD5 bool) (string, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("gdal.digestFile: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", "", fmt.Errorf("gdal.digestFile: %w", err)
	}
	hashes := []hash.Hash{sha256.New()}
	if withMD5 {
		hashes = append(hashes, md5.New())
	}
	for off := int64(0); off < fi.Size(); off += digestWindow {
		if err := ctx.Err(); err != nil {
			return "", "", err
		}
		n := int(min(digestWindow, fi.Size()-off))
		// Populated at once: one call instead of a page fault per page.
		data, err := unix.Mmap(int(f.Fd()), off, n, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return "", "", fmt.Errorf("gdal.digestFile: map %s: %w", path, err)
		}
		var wg sync.WaitGroup
		for _, h := range hashes[1:] {
			wg.Go(func() { h.Write(data) })
		}
		hashes[0].Write(data)
		wg.Wait()
		if err := unix.Munmap(data); err != nil {
			return "", "", fmt.Errorf("gdal.digestFile: unmap %s: %w", path, err)
		}
	}
	sum := hex.EncodeToString(hashes[0].Sum(nil))
	if !withMD5 {
		return sum, "", nil
	}
	return sum, hex.EncodeToString(hashes[1].Sum(nil)), nil
}
