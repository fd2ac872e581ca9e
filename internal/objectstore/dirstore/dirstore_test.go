package dirstore_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/dirstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/objectstoretest"
)

func TestMain(m *testing.M) {
	if os.Getenv("DIRSTORE_HELPER") != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// newStore returns a store with an empty bucket "b" under a temporary root.
func newStore(t *testing.T, opts ...dirstore.Option) (*dirstore.Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := dirstore.New(root, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket("b"); err != nil {
		t.Fatal(err)
	}
	return s, root
}

func TestConformance(t *testing.T) {
	objectstoretest.RunStoreTests(t, func(t *testing.T) (objectstore.Store, string) {
		s, _ := newStore(t)
		return s, "b"
	})
}

func TestConformanceMappedBucket(t *testing.T) {
	objectstoretest.RunStoreTests(t, func(t *testing.T) (objectstore.Store, string) {
		s, err := dirstore.New("", dirstore.WithBucketDir("mapped", t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		return s, "mapped"
	})
}

func put(t *testing.T, s objectstore.Store, bucket, key, body string, meta map[string]string) objectstore.Object {
	t.Helper()
	obj, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: bucket, Key: key, Body: strings.NewReader(body), Size: int64(len(body)), Metadata: meta})
	if err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
	return obj
}

func listAll(t *testing.T, s objectstore.Store, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(context.Background(), bucket, prefix, func(o objectstore.Object) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	return keys
}

func TestInvalidKeys(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	// The keys no store accepts are InvalidKey (objectstore.CheckKey); the
	// ones only a directory cannot hold are InvalidInput.
	for _, key := range []string{"", "../escape", "a/../../escape", "/etc/passwd", "a//b", "./a", "a/.", "dir/", "nul\x00byte",
		".geomigrate-meta/x.json", "a/.geomigrate-tmp-123", strings.Repeat("k", 1025)} {
		want := fault.InvalidKey
		if key == "dir/" || strings.Contains(key, ".geomigrate-") {
			want = fault.InvalidInput
		}
		t.Run(fmt.Sprintf("%.40q", key), func(t *testing.T) {
			errs := map[string]error{}
			_, errs["Head"] = s.Head(ctx, "b", key)
			_, errs["Open"] = s.Open(ctx, "b", key)
			_, errs["Put"] = s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: key, Body: strings.NewReader("x"), Size: 1})
			_, errs["CopyDst"] = s.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "x", DstBucket: "b", DstKey: key})
			_, errs["CopySrc"] = s.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: key, DstBucket: "b", DstKey: "x"})
			errs["Delete"] = s.Delete(ctx, "b", key)
			_, errs["LocalPath"] = s.LocalPath("b", key)
			for op, err := range errs {
				if fault.CodeOf(err) != want {
					t.Errorf("%s(%.40q) = %.200v, want a DataError %s", op, key, err, want)
				}
				if err != nil && !strings.Contains(err.Error(), "dirstore."+strings.TrimSuffix(strings.TrimSuffix(op, "Dst"), "Src")) {
					t.Errorf("%s error %q does not say where it happened", op, err)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escape")); err == nil {
		t.Error("a key escaped the bucket")
	}
}

func TestMissingBucket(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, bucket := range []string{"nope", "../b", ".hidden", "a/b"} {
		_, err := s.Head(ctx, bucket, "k")
		switch {
		case fault.TierOf(err) == fault.TierSystemic:
			if !errors.Is(err, dirstore.ErrNoSuchBucket) {
				t.Errorf("Head in %q = %v, want ErrNoSuchBucket", bucket, err)
			}
		case fault.CodeOf(err) == fault.InvalidInput:
		default:
			t.Errorf("Head in %q = %v, want NoSuchBucket or InvalidInput", bucket, err)
		}
	}
	if _, err := dirstore.New("", dirstore.WithBucketDir("x", filepath.Join(t.TempDir(), "absent"))); err == nil {
		t.Error("New accepted a missing mapped directory")
	}
}

func TestLayoutAndListHidesInternals(t *testing.T) {
	s, root := newStore(t)
	put(t, s, "b", "x/y.tif", "data", map[string]string{"Recipe": "r1"})
	if b, err := os.ReadFile(filepath.Join(root, "b", "x", "y.tif")); err != nil || string(b) != "data" {
		t.Fatalf("object file = %q, %v", b, err)
	}
	// The entry is on the file (an extended attribute) or, where the file
	// system has none, in the sidecar.
	side, err := os.ReadFile(filepath.Join(root, "b", "x", ".geomigrate-meta", "y.tif.json"))
	if err != nil {
		buf := make([]byte, 4096)
		n, xerr := unix.Getxattr(filepath.Join(root, "b", "x", "y.tif"), "user.geomigrate.entry", buf)
		if xerr != nil {
			t.Fatalf("no sidecar (%v) and no entry attribute (%v)", err, xerr)
		}
		side = buf[:n]
	}
	if !strings.Contains(string(side), `"recipe":"r1"`) {
		t.Fatalf("entry = %s", side)
	}
	// A stale temporary and the lock directory exist; List shows neither.
	if err := os.WriteFile(filepath.Join(root, "b", "x", ".geomigrate-tmp-dead"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", ".geomigrate-locks")); err != nil {
		t.Errorf("lock directory: %v", err)
	}
	if got := listAll(t, s, "b", ""); !slices.Equal(got, []string{"x/y.tif"}) {
		t.Errorf("List = %v, want only the object", got)
	}
	p, err := s.LocalPath("b", "x/y.tif")
	if err != nil || p != filepath.Join(root, "b", "x", "y.tif") {
		t.Errorf("LocalPath = %s, %v", p, err)
	}
	if _, err := s.LocalPath("b", "x/none"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("LocalPath of a missing key = %v", err)
	}
}

// slowReader lets the test act while a Put is half way through its body.
type slowReader struct {
	first   []byte
	started chan struct{}
	resume  chan struct{}
	rest    []byte
	stage   int
}

func (r *slowReader) Read(p []byte) (int, error) {
	switch r.stage {
	case 0:
		r.stage++
		return copy(p, r.first), nil
	case 1:
		r.stage++
		close(r.started)
		<-r.resume
		return copy(p, r.rest), nil
	}
	return 0, io.EOF
}

func TestWriteInProgressIsInvisible(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	put(t, s, "b", "obj", "old", nil)
	r := &slowReader{first: []byte("new-part-1"), rest: []byte("-part-2"), started: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error)
	go func() {
		_, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "obj", Body: r, Size: -1})
		done <- err
	}()
	<-r.started
	if got := listAll(t, s, "b", ""); !slices.Equal(got, []string{"obj"}) {
		t.Errorf("List during a write = %v", got)
	}
	rc, err := s.Open(ctx, "b", "obj")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "old" {
		t.Errorf("read during a write = %q, want old", b)
	}
	close(r.resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rc, _ = s.Open(ctx, "b", "obj")
	b, _ = io.ReadAll(rc)
	rc.Close()
	if string(b) != "new-part-1-part-2" {
		t.Errorf("read after the write = %q", b)
	}
}

func TestFailedPutLeavesNothing(t *testing.T) {
	s, root := newStore(t)
	boom := fault.Transient("network", errors.New("connection reset"))
	_, err := s.Put(context.Background(), objectstore.PutRequest{Bucket: "b", Key: "d/k", Body: io.MultiReader(strings.NewReader("abc"), errReader{boom}), Size: -1})
	if fault.TierOf(err) != fault.TierTransient || !strings.Contains(err.Error(), "dirstore.Put: b/d/k") {
		t.Errorf("Put with a failing body = %v, want the body's TransientError, wrapped", err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "b", "d"))
	for _, e := range entries {
		t.Errorf("left behind: %s", e.Name())
	}
}

func TestFailedPutLeavesNoDirectories(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "a/deep/k", Body: strings.NewReader("abc"), Size: 99}); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("Put with a wrong size = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", "a")); !os.IsNotExist(err) {
		t.Errorf("a failed Put left directory a: %v", err)
	}
	put(t, s, "b", "a", "now a file", nil)
	put(t, s, "b", "x/y", "1", nil)
	if _, err := s.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "x/y", DstBucket: "b", DstKey: "x/z/w", IfMatch: "nope"}); !errors.Is(err, objectstore.ErrPreconditionFailed) {
		t.Fatalf("Copy = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", "x", "z")); !os.IsNotExist(err) {
		t.Errorf("a failed Copy left directory x/z: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", "x", "y")); err != nil {
		t.Errorf("x/y: %v", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestSourceTreeFiles(t *testing.T) {
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "rasters", "2024"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "rasters", "2024", "dem.tif"), []byte("GeoTIFF bytes"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "roads.shp"), []byte("shape"), 0o644))
	must(t, os.Symlink(filepath.Join(src, "roads.shp"), filepath.Join(src, "roads-link.shp")))
	must(t, os.Symlink(src, filepath.Join(src, "loop"))) // a directory symlink must not trap List
	must(t, syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644))

	s, _ := newStore(t, dirstore.WithBucketDir("src", src))
	ctx := context.Background()
	if got := listAll(t, s, "src", ""); !slices.Equal(got, []string{"rasters/2024/dem.tif", "roads-link.shp", "roads.shp"}) {
		t.Errorf("List = %v", got)
	}
	h, err := s.Head(ctx, "src", "rasters/2024/dem.tif")
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != 13 || h.ETag == "" || len(h.Metadata) != 0 {
		t.Errorf("Head of a foreign file = %+v", h)
	}
	if h2, _ := s.Head(ctx, "src", "rasters/2024/dem.tif"); h2.ETag != h.ETag {
		t.Errorf("foreign ETag not stable: %s then %s", h.ETag, h2.ETag)
	}
	if _, err := s.Head(ctx, "src", "fifo"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head of a FIFO = %v, want ErrNotFound", err)
	}
	if p, err := s.LocalPath("src", "roads.shp"); err != nil || p != filepath.Join(src, "roads.shp") {
		t.Errorf("LocalPath = %s, %v", p, err)
	}
	// Copying out of the tree computes a real MD5 ETag.
	obj, err := s.Copy(ctx, objectstore.CopyRequest{SrcBucket: "src", SrcKey: "rasters/2024/dem.tif", DstBucket: "b", DstKey: "staging/dem.tif",
		Metadata: map[string]string{"recipe": "r"}})
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum([]byte("GeoTIFF bytes"))
	if obj.ETag != hex.EncodeToString(sum[:]) {
		t.Errorf("copied ETag = %s, want MD5", obj.ETag)
	}
	// A file changed behind the store's back gets a new ETag.
	time.Sleep(5 * time.Millisecond)
	must(t, os.WriteFile(filepath.Join(src, "rasters", "2024", "dem.tif"), []byte("GeoTIFF bytes, edited"), 0o644))
	if h3, _ := s.Head(ctx, "src", "rasters/2024/dem.tif"); h3.ETag == h.ETag || h3.Size != 21 {
		t.Errorf("ETag after an edit = %+v, was %s", h3, h.ETag)
	}
}

func TestOutOfBandEditDropsMetadata(t *testing.T) {
	s, root := newStore(t)
	obj := put(t, s, "b", "k", "converted", map[string]string{"src-sha256": "abc"})
	time.Sleep(5 * time.Millisecond)
	must(t, os.WriteFile(filepath.Join(root, "b", "k"), []byte("hand edited"), 0o644))
	h, err := s.Head(context.Background(), "b", "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Metadata) != 0 || h.ETag == obj.ETag {
		t.Errorf("Head after an out-of-band edit = %+v: the old metadata no longer describes the file", h)
	}
}

func TestKeyDirectoryConflicts(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	put(t, s, "b", "a", "file", nil)
	_, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "a/b", Body: strings.NewReader("x"), Size: 1})
	if fault.CodeOf(err) != fault.DestinationTaken {
		t.Errorf("Put a/b under object a = %v, want DataError %s", err, fault.DestinationTaken)
	}
	put(t, s, "b", "d/e", "x", nil)
	_, err = s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "d", Body: strings.NewReader("x"), Size: 1})
	if fault.CodeOf(err) != fault.DestinationTaken {
		t.Errorf("Put d over directory d = %v, want DataError %s", err, fault.DestinationTaken)
	}
	if err := s.Delete(ctx, "b", "d"); err != nil {
		t.Errorf("Delete of a directory-like key = %v", err)
	}
	if got := listAll(t, s, "b", ""); !slices.Equal(got, []string{"a", "d/e"}) {
		t.Errorf("List = %v", got)
	}
}

func TestDeletePrunesEmptyDirectories(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	put(t, s, "b", "x/y/z.tif", "1", map[string]string{"m": "1"})
	put(t, s, "b", "x/keep", "2", nil)
	must(t, s.Delete(ctx, "b", "x/y/z.tif"))
	if _, err := os.Stat(filepath.Join(root, "b", "x", "y")); !os.IsNotExist(err) {
		t.Errorf("x/y still exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", "x", "keep")); err != nil {
		t.Errorf("x/keep: %v", err)
	}
	must(t, s.Delete(ctx, "b", "x/keep"))
	if _, err := os.Stat(filepath.Join(root, "b", "x")); !os.IsNotExist(err) {
		t.Errorf("x still exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "b")); err != nil {
		t.Errorf("the bucket itself was removed: %v", err)
	}
	// Now "x" can be an object.
	put(t, s, "b", "x", "3", nil)
}

func TestSweepTemps(t *testing.T) {
	s, root := newStore(t)
	put(t, s, "b", "d/obj", "keep me", map[string]string{"k": "v"})
	old := time.Now().Add(-2 * time.Hour)
	stale := []string{filepath.Join(root, "b", "d", ".geomigrate-tmp-old1"), filepath.Join(root, "b", "d", ".geomigrate-meta", ".geomigrate-tmp-old2")}
	for _, p := range stale {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755)) // a sidecar directory, where no xattr is set
		must(t, os.WriteFile(p, []byte("x"), 0o644))
		must(t, os.Chtimes(p, old, old))
	}
	fresh := filepath.Join(root, "b", ".geomigrate-tmp-fresh")
	must(t, os.WriteFile(fresh, []byte("x"), 0o644))
	n, err := s.SweepTemps(context.Background(), "b", time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("SweepTemps = %d, %v; want 2", n, err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived", p)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp removed: %v", err)
	}
	if h, err := s.Head(context.Background(), "b", "d/obj"); err != nil || h.Metadata["k"] != "v" {
		t.Errorf("object after sweep = %+v, %v", h, err)
	}
}

// TestAttachSweepsOnlyWhenAlone (docs/decisions/0014): temporaries a killed
// writer left (in data, staging and sidecar directories, whatever their age)
// are removed by the first writer to attach, never while another writer is
// attached (they may be its writes in progress), and nothing but the store's
// own temporary names is touched. flock(2) sees each open file description as
// an owner, so a second Store stands for a second process.
func TestAttachSweepsOnlyWhenAlone(t *testing.T) {
	s, root := newStore(t)
	put(t, s, "b", "_staging/x/obj", "staged", nil)
	put(t, s, "b", "out/obj.tif", "final", map[string]string{"k": "v"})
	left := []string{
		filepath.Join(root, "b", ".geomigrate-tmp-0001"),
		filepath.Join(root, "b", "_staging", "x", ".geomigrate-tmp-0002"),
		filepath.Join(root, "b", "out", ".geomigrate-meta", ".geomigrate-tmp-0003"),
	}
	kept := []string{filepath.Join(root, "b", "out", "geomigrate-tmp-not-ours"), filepath.Join(root, "b", "out", "x.tmp")}
	for _, p := range append(append([]string(nil), left...), kept...) {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("partial"), 0o644))
	}
	other, err := dirstore.New(root)
	must(t, err)
	ctx := context.Background()

	// Another writer is attached: nothing is removed.
	_, alone, releaseOther, err := other.Attach(ctx, "b")
	if err != nil || !alone {
		t.Fatalf("first Attach: alone %v, %v", alone, err)
	}
	releaseOther() // it swept: put the temporaries back for the next case
	for _, p := range left {
		must(t, os.WriteFile(p, []byte("partial"), 0o644))
	}
	_, _, releaseOther, err = other.Attach(ctx, "b")
	must(t, err)
	for _, p := range left {
		must(t, os.WriteFile(p, []byte("partial"), 0o644))
	}
	n, alone, release, err := s.Attach(ctx, "b")
	if err != nil || alone || n != 0 {
		t.Fatalf("Attach beside another writer = %d, alone %v, %v; want 0, false", n, alone, err)
	}
	for _, p := range left {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed while another writer was attached: %v", p, err)
		}
	}
	release()
	releaseOther()

	// Alone: every temporary goes, whatever its age; objects stay.
	n, alone, release, err = s.Attach(ctx, "b")
	if err != nil || !alone || n != len(left) {
		t.Fatalf("Attach alone = %d, alone %v, %v; want %d, true", n, alone, err, len(left))
	}
	defer release()
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived", p)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s (not the store's temporary name) removed: %v", p, err)
		}
	}
	if h, err := s.Head(ctx, "b", "out/obj.tif"); err != nil || h.Metadata["k"] != "v" {
		t.Errorf("object after sweep = %+v, %v", h, err)
	}
	// While attached, another writer attaches beside it without sweeping.
	if n, alone, rel, err := other.Attach(ctx, "b"); err != nil || alone || n != 0 {
		t.Errorf("second writer: %d, alone %v, %v", n, alone, err)
	} else {
		rel()
	}
}

func TestReadOnlyBucketIsSystemic(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	must(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	s, err := dirstore.New("", dirstore.WithBucketDir("ro", dir))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Put(context.Background(), objectstore.PutRequest{Bucket: "ro", Key: "k", Body: strings.NewReader("x"), Size: 1})
	if fault.TierOf(err) != fault.TierSystemic || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("Put into a read-only directory = %v, want SystemicError AccessDenied", err)
	}
}

func TestCancelledContext(t *testing.T) {
	s, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "k", Body: strings.NewReader("x"), Size: 1})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v", err)
	}
	if err := s.List(ctx, "b", "", func(objectstore.Object) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v", err)
	}
}

// TestCrossProcessConditionalWrites races If-None-Match writes from separate
// processes on one root: the flock makes exactly one win.
func TestCrossProcessConditionalWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, mode := range []string{"copy", "put"} {
		t.Run(mode, func(t *testing.T) {
			s, root := newStore(t)
			const procs = 8
			for i := range procs {
				put(t, s, "b", fmt.Sprintf("staging/%d", i), fmt.Sprintf("from process %d", i), nil)
			}
			start := filepath.Join(t.TempDir(), "go")
			cmds := make([]*exec.Cmd, procs)
			outs := make([]*bytes.Buffer, procs)
			for i := range procs {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				outs[i] = &bytes.Buffer{}
				cmd.Stdout, cmd.Stderr = outs[i], outs[i]
				cmd.Env = append(os.Environ(), "DIRSTORE_HELPER="+mode, "HELPER_ROOT="+root, "HELPER_START="+start, fmt.Sprintf("HELPER_ID=%d", i))
				must(t, cmd.Start())
				cmds[i] = cmd
			}
			time.Sleep(50 * time.Millisecond)
			must(t, os.WriteFile(start, nil, 0o644))
			won := 0
			for i, cmd := range cmds {
				err := cmd.Wait()
				var ee *exec.ExitError
				switch {
				case err == nil:
					won++
				case errors.As(err, &ee) && ee.ExitCode() == 3:
				default:
					t.Errorf("process %d: %v: %s", i, err, outs[i])
				}
			}
			if won != 1 {
				t.Fatalf("%d processes won the conditional %s, want 1", won, mode)
			}
			h, err := s.Head(context.Background(), "b", "final")
			if err != nil {
				t.Fatal(err)
			}
			rc, _ := s.Open(context.Background(), "b", "final")
			b, _ := io.ReadAll(rc)
			rc.Close()
			if want := "from process " + h.Metadata["winner"]; string(b) != want {
				t.Errorf("final = %q, metadata says %q", b, want)
			}
		})
	}
}

// helperMain is a child process of TestCrossProcessConditionalWrites.
func helperMain() int {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(os.Getenv("HELPER_START")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Printf("gave up after 1m waiting for the start file %s\n", os.Getenv("HELPER_START"))
			return 1
		}
		time.Sleep(time.Millisecond)
	}
	s, err := dirstore.New(os.Getenv("HELPER_ROOT"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	id := os.Getenv("HELPER_ID")
	ctx := context.Background()
	meta := map[string]string{"winner": id}
	if os.Getenv("DIRSTORE_HELPER") == "copy" {
		_, err = s.Copy(ctx, objectstore.CopyRequest{SrcBucket: "b", SrcKey: "staging/" + id, DstBucket: "b", DstKey: "final", Metadata: meta, IfNoneMatch: true})
	} else {
		body := "from process " + id
		_, err = s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: "final", Body: strings.NewReader(body), Size: int64(len(body)), Metadata: meta, IfNoneMatch: true})
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, objectstore.ErrPreconditionFailed):
		return 3
	}
	fmt.Println(err)
	return 1
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
