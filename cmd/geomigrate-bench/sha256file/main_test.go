package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func TestHashFile(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 7, 9 << 20} { // empty, tiny, more than one 8 MiB chunk
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 31)
		}
		p := filepath.Join(dir, "f.bin")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := hashFile(context.Background(), p)
		want := sha256.Sum256(data)
		if err != nil || got != hex.EncodeToString(want[:]) {
			t.Fatalf("%d bytes: %s, %v; want %x", n, got, err, want)
		}
	}
}
