package boltstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	if _, err := OpenReadOnly(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly created %s", path)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, statestore.Job{ID: "j1", Status: statestore.Completed}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if j, err := ro.Get(ctx, "j1"); err != nil || j.Status != statestore.Completed {
		t.Errorf("Get = %+v, %v", j, err)
	}
	if _, err := ro.Get(ctx, "j2"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("Get of a missing record: %v", err)
	}
	if err := ro.Put(ctx, statestore.Job{ID: "j2"}, 0); err == nil {
		t.Error("Put on a read-only store succeeded")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(was, now) {
		t.Error("the database file changed under a read-only store")
	}
}
