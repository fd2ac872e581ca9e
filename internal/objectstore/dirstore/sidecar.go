package dirstore

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sidecar is the JSON file beside an object that holds what a file system
// cannot: ETag and user metadata. Prev keeps the entry of the version being
// replaced so the sidecar matches the data file at every instant.
type sidecar struct {
	V    int    `json:"v"`
	Cur  *entry `json:"cur,omitempty"`
	Prev *entry `json:"prev,omitempty"`
}

// entry describes one version of an object's file. Dev, Ino, Size and
// MtimeNS identify the file; the rest describes it.
type entry struct {
	ETag     string            `json:"etag"`
	Size     int64             `json:"size"`
	Mtime    time.Time         `json:"mtime"`
	MtimeNS  int64             `json:"mtime_ns"`
	Dev      uint64            `json:"dev"`
	Ino      uint64            `json:"ino"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// inXattr: the entry is stored on the data file itself (xattrName),
	// so the write needs no sidecar.
	inXattr bool
}

// xattrName is the extended attribute that holds an object's entry on its
// own file. Set before the data's fsync, the entry is durable with the
// bytes and moves with them in the rename: no sidecar file, directory or
// their two fsyncs. Where the file system refuses user attributes (or the
// entry is too large for one), the sidecar is written as before; readers
// look at the attribute first, then the sidecar (docs/decisions/0084).
const xattrName = "user.geomigrate.entry"

// xattrEntries turns the attribute off (tests of the sidecar path).
var xattrEntries = true

// setXattrEntry stores e on the open file f and reports whether the file
// system took it.
func setXattrEntry(f *os.File, e *entry) bool {
	if !xattrEntries {
		return false
	}
	b, err := json.Marshal(e)
	if err != nil {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fsetxattr(int(fd), xattrName, b, 0) }); err != nil || serr != nil {
		return false
	}
	e.inXattr = true
	return true
}

// xattrBuffers hold the reads of xattrName (an entry is a few hundred
// bytes; a larger one is read at its size).
var xattrBuffers = sync.Pool{New: func() any { b := make([]byte, 1024); return &b }}

// readXattrEntry returns the entry stored on the file at path, or nil.
func readXattrEntry(path string) *entry {
	bp := xattrBuffers.Get().(*[]byte)
	defer xattrBuffers.Put(bp)
	buf := *bp
	n, err := unix.Getxattr(path, xattrName, buf)
	if errors.Is(err, unix.ERANGE) {
		if n, err = unix.Getxattr(path, xattrName, nil); err != nil || n <= 0 || n > 64<<10 {
			return nil
		}
		buf = make([]byte, n)
		n, err = unix.Getxattr(path, xattrName, buf)
	}
	if err != nil || n <= 0 {
		return nil
	}
	var e entry
	if json.Unmarshal(buf[:n], &e) != nil {
		return nil
	}
	return &e
}

type fileID struct {
	dev, ino    uint64
	size, mtime int64
}

func fileIDOf(fi fs.FileInfo) fileID {
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // types differ across platforms
	}
	return id
}

func sameFile(a, b fs.FileInfo) bool { return fileIDOf(a) == fileIDOf(b) }

func entryOf(fi fs.FileInfo) *entry {
	id := fileIDOf(fi)
	return &entry{Size: id.size, Mtime: fi.ModTime().UTC(), MtimeNS: id.mtime, Dev: id.dev, Ino: id.ino}
}

func (e *entry) id() fileID { return fileID{dev: e.Dev, ino: e.Ino, size: e.Size, mtime: e.MtimeNS} }

// match returns the entry describing the file fi, or nil.
func (sc *sidecar) match(fi fs.FileInfo) *entry {
	if sc == nil {
		return nil
	}
	id := fileIDOf(fi)
	for _, e := range []*entry{sc.Cur, sc.Prev} {
		if e != nil && e.id() == id {
			return e
		}
	}
	return nil
}

func (sc *sidecar) cur() *entry {
	if sc == nil {
		return nil
	}
	return sc.Cur
}

func (sc *sidecar) prev() *entry {
	if sc == nil {
		return nil
	}
	return sc.Prev
}

// copiedEntry is e re-identified for the file fi at path when the file's
// bytes are those e describes (their MD5 is e's ETag, the file unchanged
// while it was read), else nil. The entry is written back onto the file
// (xattrName, through the descriptor read, so a file renamed over path
// meanwhile is not touched): the next read matches it by inode without
// reading the bytes again. Where the attribute cannot be written (a
// read-only copy, a file system without user attributes) every read of
// the object hashes it.
func copiedEntry(path string, fi fs.FileInfo, e *entry) *entry {
	if len(e.ETag) != 2*md5.Size {
		return nil // not an MD5: nothing to check the bytes against
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil || !sameFile(fi, before) {
		return nil
	}
	h := md5.New()
	buf := copyBuffers.Get().(*[]byte)
	_, err = io.CopyBuffer(h, f, *buf)
	copyBuffers.Put(buf)
	if err != nil || hex.EncodeToString(h.Sum(nil)) != e.ETag {
		return nil
	}
	after, err := f.Stat()
	if err != nil || !sameFile(fi, after) {
		return nil
	}
	ce := entryOf(fi)
	ce.ETag, ce.Metadata = e.ETag, e.Metadata
	setXattrEntry(f, ce)
	return ce
}

// sidecarPath is <dir>/.geomigrate-meta/<name>.json; names too long for
// the suffix are hashed.
func sidecarPath(path string) string {
	dir, name := filepath.Split(path)
	if len(name)+len(".json") > 255 {
		sum := sha256.Sum256([]byte(name))
		name = "sha256-" + hex.EncodeToString(sum[:])
	}
	return filepath.Join(dir, metaDirName, name+".json")
}

// readSidecar reads the sidecar of the object at path; a missing or
// unreadable sidecar is nil (the file is then described from its stat).
func readSidecar(path string) *sidecar {
	b, err := os.ReadFile(sidecarPath(path))
	if err != nil {
		return nil
	}
	var sc sidecar
	if json.Unmarshal(b, &sc) != nil {
		return nil
	}
	return &sc
}

// write replaces the sidecar of the object at path atomically; durable
// makes the new sidecar survive a machine crash before it returns.
func (sc *sidecar) write(path string, durable bool) error {
	b, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	sp := sidecarPath(path)
	dir := filepath.Dir(sp)
	f, err := createTemp(dir)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			cleanupTemp(f)
		}
	}()
	if _, err := f.Write(b); err != nil {
		return err
	}
	if durable {
		if err := fsync(f); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), sp); err != nil {
		return err
	}
	renamed = true
	if !durable {
		return nil
	}
	return syncDir(dir)
}
