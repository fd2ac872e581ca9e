package dirstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// Head describes an object.
func (s *Store) Head(ctx context.Context, bucket, key string) (objectstore.Object, error) {
	const op = "Head"
	bdir, path, err := s.resolveLive(ctx, op, bucket, key)
	if err != nil {
		return objectstore.Object{}, err
	}
	path = located(bdir, key, path)
	if _, err := checkLink(where(op, bucket, key), bdir, path); err != nil {
		return objectstore.Object{}, err
	}
	// A writer may rename the sidecar and the data file between our stat and
	// our sidecar read; the sidecar always holds the entry of the data file
	// in place, so a stat that did not change around the read is consistent.
	var obj objectstore.Object
	for range 8 {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return objectstore.Object{}, s.readErr(op, bucket, key, err)
		}
		if e, _ := s.entryFor(path, fi); e != nil {
			return objectOf(bucket, key, fi, e), nil
		}
		obj = objectOf(bucket, key, fi, nil)
		fi2, err := os.Stat(path)
		if err == nil && sameFile(fi, fi2) {
			return obj, nil
		}
	}
	return obj, nil
}

func (s *Store) readErr(op, bucket, key string, err error) error {
	if err == nil || notFound(err) {
		return fmt.Errorf("%s: %w", where(op, bucket, key), objectstore.ErrNotFound)
	}
	return classify(where(op, bucket, key), err)
}

// openObject opens an object's file and describes the version it opened.
func (s *Store) openObject(op, bucket, key string) (*os.File, objectstore.Object, *entry, error) {
	bdir, path, err := s.resolve(op, bucket, key)
	if err != nil {
		return nil, objectstore.Object{}, nil, err
	}
	path = located(bdir, key, path)
	if _, err := checkLink(where(op, bucket, key), bdir, path); err != nil {
		return nil, objectstore.Object{}, nil, err
	}
	for attempt := 0; ; attempt++ {
		// Stat before opening so a FIFO in a source tree cannot block us.
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, objectstore.Object{}, nil, s.readErr(op, bucket, key, err)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, objectstore.Object{}, nil, s.readErr(op, bucket, key, err)
		}
		if fi, err = f.Stat(); err != nil {
			f.Close()
			return nil, objectstore.Object{}, nil, classify(where(op, bucket, key), err)
		}
		if e, _ := s.entryFor(path, fi); e != nil {
			return f, objectOf(bucket, key, fi, e), e, nil
		}
		fi2, err := os.Stat(path)
		if attempt >= 7 || (err == nil && sameFile(fi, fi2)) {
			return f, objectOf(bucket, key, fi, nil), nil, nil
		}
		f.Close() // replaced while we looked: open the new version
	}
}

// Open streams a whole object.
func (s *Store) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where("Open", bucket, key), err)
	}
	f, _, _, err := s.openObject("Open", bucket, key)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenRange streams length bytes from offset (length < 0: to the end). A
// range past the end is clipped; an offset at or past the end gives an empty
// stream.
func (s *Store) OpenRange(ctx context.Context, bucket, key string, offset, length int64) (io.ReadCloser, error) {
	return s.OpenRangeIfMatch(ctx, bucket, key, "", offset, length)
}

// OpenRangeIfMatch is OpenRange of the version whose ETag is etag, judged
// on the file it opened.
func (s *Store) OpenRangeIfMatch(ctx context.Context, bucket, key, etag string, offset, length int64) (io.ReadCloser, error) {
	const op = "OpenRange"
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where(op, bucket, key), err)
	}
	if offset < 0 {
		return nil, fmt.Errorf("%s: %w", where(op, bucket, key), fault.Data(fault.InvalidInput, "negative offset %d", offset))
	}
	f, obj, _, err := s.openObject(op, bucket, key)
	if err != nil {
		return nil, err
	}
	if etag != "" && obj.ETag != etag {
		f.Close()
		return nil, fmt.Errorf("%s: If-Match %s: ETag is %s: %w", where(op, bucket, key), etag, obj.ETag, objectstore.ErrPreconditionFailed)
	}
	n := obj.Size - offset
	if n < 0 {
		n = 0
	}
	if length >= 0 && length < n {
		n = length
	}
	return &sectionReadCloser{SectionReader: io.NewSectionReader(f, min(offset, obj.Size), n), f: f}, nil
}

type sectionReadCloser struct {
	*io.SectionReader
	f *os.File
}

func (r *sectionReadCloser) Close() error { return r.f.Close() }

// ctxReader stops a copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// describe stats path and finds its sidecar entry; exists is false when
// there is no file.
func (s *Store) describe(path string) (fi fs.FileInfo, e *entry, exists bool, err error) {
	fi, err = os.Stat(path)
	switch {
	case notFound(err):
		return nil, nil, false, nil
	case err != nil:
		return nil, nil, false, err
	}
	e, _ = s.entryFor(path, fi)
	return fi, e, true, nil
}

// entryFor returns the entry describing the file fi at path: the scratch
// entry this process keeps for it, else the one on the file (xattrName),
// else its sidecar's; inMemory tells whether it was the first.
func (s *Store) entryFor(path string, fi fs.FileInfo) (e *entry, inMemory bool) {
	s.scratchMu.Lock()
	me := s.scratch[path]
	s.scratchMu.Unlock()
	id := fileIDOf(fi)
	if me != nil && me.id() == id {
		return me, true
	}
	xe := readXattrEntry(path)
	if xe != nil && xe.id() == id {
		return xe, false
	}
	sc := readSidecar(path)
	if e := sc.match(fi); e != nil {
		return e, false
	}
	// A copy of the file (cp -a, rsync -aX, a backup restored) carries
	// the entry but not the inode it was matched by: it still describes
	// these bytes when their MD5 is its ETag (docs/decisions/0103).
	for _, e := range []*entry{xe, sc.cur(), sc.prev()} {
		if e != nil && e.Size == id.size {
			if ce := copiedEntry(path, fi, e); ce != nil {
				return ce, false
			}
		}
	}
	return nil, false
}

func objectOf(bucket, key string, fi fs.FileInfo, e *entry) objectstore.Object {
	o := objectstore.Object{Bucket: bucket, Key: key, Size: fi.Size(), Modified: fi.ModTime(), Metadata: map[string]string{}}
	if e != nil {
		o.ETag = e.ETag
		maps.Copy(o.Metadata, e.Metadata)
	} else {
		o.ETag = statETag(fi)
	}
	return o
}

// statETag is the ETag of a file the store did not write: it changes when
// the file does, without reading it.
func statETag(fi fs.FileInfo) string {
	id := fileIDOf(fi)
	sum := sha256.Sum256(fmt.Appendf(nil, "%d:%d:%d:%d", id.dev, id.ino, id.size, id.mtime))
	return hex.EncodeToString(sum[:16])
}
