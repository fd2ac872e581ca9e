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

func TestSharedAndTryLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	open := func() *os.File {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b, c := open(), open(), open()
	ctx := context.Background()
	if err := LockShared(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := LockShared(ctx, b); err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	if ok, err := TryLock(c); ok || err != nil {
		t.Fatalf("TryLock while shared holders: %v %v, want false", ok, err)
	}
	_ = Unlock(a)
	_ = Unlock(b)
	if ok, err := TryLock(c); !ok || err != nil {
		t.Fatalf("TryLock with no holder: %v %v, want true", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if err := LockShared(short, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shared lock while exclusive held: %v, want the context's deadline", err)
	}
	if err := LockShared(ctx, c); err != nil {
		t.Fatalf("converting the exclusive lock: %v", err)
	}
	if err := LockShared(ctx, a); err != nil {
		t.Fatalf("shared lock after the conversion: %v", err)
	}
}
