package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInputsAreDeterministic(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		write func(string) error
		check func(t *testing.T, b []byte)
	}{
		{"points.csv", func(p string) error { return writePoints(p, 1000) }, func(t *testing.T, b []byte) {
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(lines) != 1001 || lines[0] != "id,x,y,class,value" || !strings.HasPrefix(lines[1000], "999,") {
				t.Errorf("%d lines, header %q, last %q", len(lines), lines[0], lines[len(lines)-1])
			}
		}},
		{"grey.pgm", func(p string) error { return writePGM(p, 64) }, func(t *testing.T, b []byte) {
			header := "P5\n64 64\n65535\n"
			if !bytes.HasPrefix(b, []byte(header)) || len(b) != len(header)+64*64*2 {
				t.Errorf("%d bytes, header %q", len(b), b[:min(len(b), 16)])
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first []byte
			for i := range 2 {
				p := filepath.Join(dir, c.name)
				if err := c.write(p); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = b
					c.check(t, b)
				} else if !bytes.Equal(first, b) {
					t.Error("written twice, different bytes")
				}
			}
		})
	}
}

func TestMeasureNeedsSuccessAndOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	if err := measure("ok", out, []string{"sh", "-c", "echo > " + out}); err != nil {
		t.Errorf("a child that succeeds and writes: %v", err)
	}
	if err := measure("nothing", filepath.Join(dir, "none*"), []string{"true"}); err == nil {
		t.Error("a child that writes nothing passed")
	}
	if err := measure("fails", out, []string{"false"}); err == nil {
		t.Error("a failing child passed")
	}
}
