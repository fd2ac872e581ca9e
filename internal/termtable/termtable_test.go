package termtable

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// longKeys are source keys of the width a real archive has: deep folders,
// non-ASCII names (accents, CJK of two columns each, a combining mark).
var longKeys = []string{
	"archive/données/été-2024/orthophotos/département-74/dalle_0412_6524_très_longue_référence.tif",
	"archive/東京都/測量/標高データ/メッシュ_5339_45_第二版_最終.tif",
	"archive/plain/" + strings.Repeat("x", 150) + ".tif",
	"archive/combining/cafe\u0301-de\u0301tail.tif",
}

// summary is a table of counts, statuses, a key and free text, as the
// CLI's status and summary tables hold.
func summary() *Table {
	t := New("  ",
		Column{Header: "STATUS", Fit: Keep, Key: true},
		Column{Header: "SOURCE", Fit: Middle, Key: true},
		Column{Header: "ATTEMPTS", Right: true},
		Column{Header: "ERROR", Fit: Wrap},
		Column{Header: "UPDATED"},
	)
	for i, k := range longKeys {
		t.Add("REMEDIAL", k, strings.Repeat("7", i+1), "DataError: CorruptSource: the raster cannot be read in full: the file is truncated or damaged: tile 0 is cut short (1502 of its 5274 bytes are in the file); upload a complete copy", "2026-12-01 19:47:06")
	}
	return t
}

// totals is a wide table of counts alone (the run summary's last table).
func totals() *Table {
	var cols []Column
	var cells []string
	for i, h := range []string{"completed", "skipped", "ignored", "remediation", "dlq", "failed", "not started", "files", "warned", "retries", "bytes in", "bytes out", "time"} {
		cols = append(cols, Column{Header: h, Right: true})
		cells = append(cells, strings.Repeat("9", i%4+1)+"1"+string(rune('a'+i)))
	}
	t := New("", cols...)
	t.Add(cells...)
	return t
}

func TestWriteFitsTheWidth(t *testing.T) {
	tests := []struct {
		name  string
		table func() *Table
		// every cell of want appears whole in the output
		want []string
	}{
		{"keys and free text", summary, []string{"REMEDIAL", "7", "77", "777", "7777", "ATTEMPTS", "UPDATED", "2026-12-01 19:47:06"}},
		{"keys only", func() *Table {
			t := New("", Column{Header: "A", Key: true}, Column{Header: "B", Key: true, Fit: Middle})
			t.Add("REMEDIAL", longKeys[0])
			return t
		}, []string{"REMEDIAL"}},
		{"counts only", totals, func() []string {
			var w []string
			for i := 0; i < 13; i++ {
				w = append(w, strings.Repeat("9", i%4+1)+"1"+string(rune('a'+i)))
			}
			return append(w, "completed", "not started", "bytes out", "time")
		}()},
	}
	for _, tt := range tests {
		for _, width := range []int{60, 80, 120} {
			var buf bytes.Buffer
			if err := tt.table().Write(&buf, width); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if n := runewidth.StringWidth(l); n > width {
					t.Errorf("%s at %d: a line of %d columns: %q", tt.name, width, n, l)
				}
			}
			fields := strings.Fields(out)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("%s at %d: %q is not in the output:\n%s", tt.name, width, w, out)
				}
				if !strings.Contains(w, " ") && !contains(fields, w) {
					t.Errorf("%s at %d: %q is not a whole cell of the output:\n%s", tt.name, width, w, out)
				}
			}
		}
	}
}

func contains(fields []string, w string) bool {
	for _, f := range fields {
		if f == w {
			return true
		}
	}
	return false
}

// TestWrappedTextIsKept: a wrapped column loses no word, and a key cut in
// the middle keeps its start and its file name's end.
func TestWrappedTextIsKept(t *testing.T) {
	for _, width := range []int{60, 80, 120} {
		var buf bytes.Buffer
		if err := summary().Write(&buf, width); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, word := range strings.Fields("DataError: CorruptSource: the raster cannot be read in full: the file is truncated or damaged: tile 0 is cut short (1502 of its 5274 bytes are in the file); upload a complete copy") {
			if !strings.Contains(out, word) {
				t.Errorf("at %d the word %q of the error is lost:\n%s", width, word, out)
			}
		}
		for _, end := range []string{"archive/", ".tif"} {
			if n := strings.Count(out, end); n < len(longKeys) {
				t.Errorf("at %d %q shows %d times, want once per key (%d):\n%s", width, end, n, len(longKeys), out)
			}
		}
	}
}

// TestNoLimit: width 0 (a pipe) writes rows whole, one line each, as
// text/tabwriter would.
func TestNoLimit(t *testing.T) {
	var buf bytes.Buffer
	if err := summary().Write(&buf, 0); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 1+len(longKeys) {
		t.Fatalf("%d lines, want a header and one per row:\n%s", len(lines), buf.String())
	}
	for i, k := range longKeys {
		if !strings.Contains(lines[i+1], k) {
			t.Errorf("row %d does not hold its key whole: %q", i, lines[i+1])
		}
	}
	tab := New("  ", Column{}, Column{Right: true}, Column{})
	tab.Add("a", "1", "x")
	tab.Add("bbb", "222", "")
	buf.Reset()
	if err := tab.Write(&buf, 0); err != nil {
		t.Fatal(err)
	}
	if want := "  a      1  x\n  bbb  222\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestCutMiddle(t *testing.T) {
	tests := []struct {
		s    string
		w    int
		want string
	}{
		{"short.tif", 20, "short.tif"},
		{"abcdefghij", 7, "abc…hij"},
		{"abcdefghij", 8, "abc…ghij"},
		{"東京都/標高.tif", 9, "東京….tif"},
		{"abc", 1, "…"},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		got := CutMiddle(tt.s, tt.w)
		if got != tt.want {
			t.Errorf("CutMiddle(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
		}
		if n := runewidth.StringWidth(got); n > max(tt.w, 0) {
			t.Errorf("CutMiddle(%q, %d) is %d columns wide", tt.s, tt.w, n)
		}
	}
}

func TestWrapText(t *testing.T) {
	tests := []struct {
		s    string
		w    int
		want []string
	}{
		{"one two three", 7, []string{"one two", "three"}},
		{"one two three", 80, []string{"one two three"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"a\nbundle: /x/y", 20, []string{"a", "bundle: /x/y"}},
		{"東京都測量", 4, []string{"東京", "都測", "量"}},
		{"東", 1, []string{"東"}},
		{"", 5, []string{""}},
	}
	for _, tt := range tests {
		if got := WrapText(tt.s, tt.w); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("WrapText(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
		}
	}
}

func TestWidth(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		columns string
		want    int
	}{
		{"", 0}, {"80", 80}, {"132", 132}, {"0", 0}, {"-5", 0}, {"wide", 0},
	}
	for _, tt := range tests {
		t.Setenv("COLUMNS", tt.columns)
		for _, w := range []any{f, &bytes.Buffer{}} {
			if got := Width(w.(interface{ Write([]byte) (int, error) })); got != tt.want {
				t.Errorf("COLUMNS=%q, %T: Width %d, want %d", tt.columns, w, got, tt.want)
			}
		}
	}
}

// TestNoteStandsWhole: a note (a path to copy) is printed whole under its
// row, from where its column starts, at any width.
func TestNoteStandsWhole(t *testing.T) {
	path := "/home/user/archive/.geomigrate-state/quarantine/" + strings.Repeat("ab", 40) + "/20261201T194702"
	for _, width := range []int{0, 60, 120} {
		tab := New("  ", Column{Key: true}, Column{Fit: Middle, Key: true}, Column{Fit: Wrap})
		tab.Add("remediation", longKeys[0], "CorruptSource: the file is truncated")
		tab.Note(1, "bundle: "+path)
		tab.Add("dlq", "f.tif", "SystemicError: AccessDenied")
		var buf bytes.Buffer
		if err := tab.Write(&buf, width); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(buf.String(), "\n")
		at := -1
		for i, l := range lines {
			if strings.HasPrefix(l, "  remediation  ") {
				at = i
			}
		}
		want := strings.Repeat(" ", 15) + "bundle: " + path
		found := false
		for i, l := range lines {
			if l == want {
				found = true
				if i <= at || !strings.HasPrefix(lines[i+1], "  dlq ") {
					t.Errorf("at %d the note is not between its row and the next:\n%s", width, buf.String())
				}
			}
		}
		if !found {
			t.Errorf("at %d no line %q:\n%s", width, want, buf.String())
		}
	}
}
