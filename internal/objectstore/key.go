package objectstore

import (
	"fmt"
	"mime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// MaxKeyLen is S3's longest object key, in bytes of UTF-8.
const MaxKeyLen = 1024

// CheckKey refuses a key that could leave the prefix it is joined to or
// break a path built from it, with a fault.DataError coded InvalidKey:
// empty, longer than MaxKeyLen, not UTF-8, a leading "/", a "." or ".."
// segment, an empty segment ("a//b"), or a control character (a newline, a
// tab, NUL …). S3 stores all of these; anything that later joins a prefix
// and such a key, or resolves it as a path, writes elsewhere
// (docs/decisions/0100). One trailing "/" is allowed: a folder marker, which
// names no file and escapes nothing.
func CheckKey(key string) error {
	why := ""
	switch {
	case key == "":
		why = "the key is empty"
	case len(key) > MaxKeyLen:
		why = fmt.Sprintf("the key is longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		why = "the key is not UTF-8"
	case strings.HasPrefix(key, "/"):
		why = `the key starts with "/"`
	default:
		if r := strings.IndexFunc(key, unicode.IsControl); r >= 0 {
			c, _ := utf8.DecodeRuneInString(key[r:])
			why = fmt.Sprintf("the key contains a control character (%U)", c)
			break
		}
		segs := strings.Split(strings.TrimSuffix(key, "/"), "/")
		for _, s := range segs {
			switch s {
			case "":
				why = "the key has an empty path segment (//)"
			case ".", "..":
				why = fmt.Sprintf("the key has a %q path segment", s)
			}
			if why != "" {
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return fault.Data(fault.InvalidKey, "object key %q: %s; rename the object to a plain relative key", key, why)
}

// MetaValue renders s for a user metadata value (an x-amz-meta-* header),
// which S3 wants in US-ASCII: S3 stores a non-ASCII value RFC 2047-decoded
// and returns it RFC 2047-encoded
// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html),
// so a UTF-8 key written as it stands does not read back equal. A value of
// printable ASCII is returned as it is (what every output written before
// carries); any other has '%' and every byte outside printable ASCII
// percent-encoded.
func MetaValue(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SameMetaValue reports whether a stored metadata value holds s: written
// by MetaValue, or (by an earlier version) as s itself, which S3 returns
// RFC 2047-encoded when it is not ASCII.
func SameMetaValue(stored, s string) bool {
	if stored == s || stored == MetaValue(s) {
		return true
	}
	if strings.HasPrefix(stored, "=?") {
		if d, err := new(mime.WordDecoder).DecodeHeader(stored); err == nil {
			return d == s
		}
	}
	return false
}

// QuoteKey shows a key on one line: as is, or Go-quoted when it holds a
// control character (a newline in a file name must not break the line).
func QuoteKey(key string) string {
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return strconv.Quote(key)
		}
	}
	return key
}
