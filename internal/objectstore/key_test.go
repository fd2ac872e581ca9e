package objectstore_test

import (
	"errors"
	"mime"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

func TestCheckKey(t *testing.T) {
	cases := []struct {
		key string
		ok  bool
	}{
		{"in/a+b.tif", true},
		{"in/a b.tif", true},
		{"in/100%.tif", true},
		{"in/München (1m).tif", true},
		{"in/a..b.tif", true},
		{"in/.hidden.tif", true},
		{"in/folder/", true},
		{"a.tif", true},
		{"", false},
		{"/abs/x.tif", false},
		{"in/../../x.tif", false},
		{"in/./x.tif", false},
		{"..", false},
		{".", false},
		{"in//x.tif", false},
		{"in/x.tif//", false},
		{"in/a\nb.tif", false},
		{"in/a\x00b.tif", false},
		{"in/a\tb.tif", false},
		{"in/\u0085.tif", false},
		{"in/\xff.tif", false},
		{strings.Repeat("a", objectstore.MaxKeyLen), true},
		{strings.Repeat("a", objectstore.MaxKeyLen+1), false},
	}
	for _, c := range cases {
		err := objectstore.CheckKey(c.key)
		if c.ok {
			if err != nil {
				t.Errorf("CheckKey(%q) = %v, want nil", c.key, err)
			}
			continue
		}
		var de *fault.DataError
		if !errors.As(err, &de) || de.Code != fault.InvalidKey {
			t.Errorf("CheckKey(%q) = %v, want a DataError coded InvalidKey", c.key, err)
		}
	}
}

func TestMetaValue(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"raw/dem tile.tif", "raw/dem tile.tif"},
		{"raw/100%.tif", "raw/100%.tif"}, // printable ASCII: as every earlier output has it
		{"raw/a+b&c=d.tif", "raw/a+b&c=d.tif"},
		{"raw/München 100%.tif", "raw/M%C3%BCnchen 100%25.tif"},
		{"raw/日本.tif", "raw/%E6%97%A5%E6%9C%AC.tif"},
	} {
		got := objectstore.MetaValue(c.in)
		if got != c.want {
			t.Errorf("MetaValue(%q) = %q, want %q", c.in, got, c.want)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x20 || got[i] > 0x7e {
				t.Errorf("MetaValue(%q) = %q is not printable US-ASCII", c.in, got)
				break
			}
		}
		for _, stored := range []string{got, c.in, mime.BEncoding.Encode("UTF-8", c.in), mime.QEncoding.Encode("utf-8", c.in)} {
			if !objectstore.SameMetaValue(stored, c.in) {
				t.Errorf("SameMetaValue(%q, %q) = false", stored, c.in)
			}
		}
		if objectstore.SameMetaValue(got, c.in+"x") || objectstore.SameMetaValue(mime.BEncoding.Encode("UTF-8", c.in+"x"), c.in) {
			t.Errorf("SameMetaValue takes another value for %q", c.in)
		}
	}
}

func TestQuoteKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"raw/dem tile.tif", "raw/dem tile.tif"},
		{"raw/München.tif", "raw/München.tif"},
		{"bad\nname.tif", `"bad\nname.tif"`},
		{"tab\there.tif", `"tab\there.tif"`},
		{"del\x7f.tif", `"del\x7f.tif"`},
		{"", ""},
	} {
		if got := objectstore.QuoteKey(c.in); got != c.want {
			t.Errorf("QuoteKey(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
