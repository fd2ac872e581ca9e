package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestLockExcludesAndHonoursTheContext(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	a, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(p) // a second open file description: flock sees it as another owner
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := Lock(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if err := Lock(ctx, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v, want the context's deadline", err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := Lock(context.Background(), b); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
}
