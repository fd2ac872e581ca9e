package objectstore_test

import (
	"bytes"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

func TestSourceCache(t *testing.T) {
	c := objectstore.NewSourceCache(10, 6)
	a, b, big := []byte("aaaa"), []byte("bbbbb"), []byte("0123456")
	c.Put("bk", "a", "sa", a)
	if _, ok := c.Take("bk", "a", "other-sum"); ok {
		t.Fatal("taken under another content hash")
	}
	c.Put("bk", "b", "sb", b)
	c.Put("bk", "big", "sx", big) // larger than one object may be
	if c.Held() != 9 {
		t.Fatalf("held %d, want 9", c.Held())
	}
	c.Put("bk", "c", "sc", []byte("cc")) // over the budget: a (oldest) goes
	if _, ok := c.Take("bk", "a", "sa"); ok {
		t.Error("the oldest entry was kept over the budget")
	}
	for _, tt := range []struct {
		key, sum string
		want     []byte
	}{{"b", "sb", b}, {"c", "sc", []byte("cc")}} {
		got, ok := c.Take("bk", tt.key, tt.sum)
		if !ok || !bytes.Equal(got, tt.want) {
			t.Errorf("Take(%s) = %q, %v", tt.key, got, ok)
		}
		if _, ok := c.Take("bk", tt.key, tt.sum); ok {
			t.Errorf("Take(%s) twice", tt.key)
		}
	}
	if c.Held() != 0 {
		t.Errorf("held %d after every entry was taken", c.Held())
	}
	var none *objectstore.SourceCache
	if none.Fits(1) {
		t.Error("a nil cache keeps objects")
	}
	if _, ok := none.Take("bk", "a", "sa"); ok {
		t.Error("a nil cache returned an entry")
	}
}
