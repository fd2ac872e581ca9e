package dirstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
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
