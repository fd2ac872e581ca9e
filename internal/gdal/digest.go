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
// (recipe.Output.SHA256, MD5). The file is mapped, not read: the hashes
// take its bytes from the page cache without a copy, each on its own
// goroutine.
type outputDigests struct {
	done        chan struct{}
	sha256, md5 string
	err         error
}

// digestChunk is how much a hash takes between two looks at its context.
const digestChunk = 4 << 20

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
	var data []byte
	if fi.Size() > 0 {
		if data, err = unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED); err != nil {
			return "", "", fmt.Errorf("gdal.digestFile: map %s: %w", path, err)
		}
		defer unix.Munmap(data)
		_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	}
	hashes := []hash.Hash{sha256.New()}
	if withMD5 {
		hashes = append(hashes, md5.New())
	}
	errs := make([]error, len(hashes))
	var wg sync.WaitGroup
	for i, h := range hashes {
		wg.Go(func() {
			for off := 0; off < len(data); off += digestChunk {
				if err := ctx.Err(); err != nil {
					errs[i] = err
					return
				}
				h.Write(data[off:min(off+digestChunk, len(data))])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return "", "", err
		}
	}
	sum := hex.EncodeToString(hashes[0].Sum(nil))
	if !withMD5 {
		return sum, "", nil
	}
	return sum, hex.EncodeToString(hashes[1].Sum(nil)), nil
}
