package termtable

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// CutMiddle is s in at most w display columns: as it is when it fits,
// else its start and end around "…", the end given the odd column (a
// file name says more than its folder).
func CutMiddle(s string, w int) string {
	if runewidth.StringWidth(s) <= w {
		return s
	}
	if w <= 1 {
		return runewidth.Truncate("…", max(w, 0), "")
	}
	head := (w - 1) / 2
	start := runewidth.Truncate(s, head, "")
	return start + runewidth.TruncatePrefix(s, w-runewidth.StringWidth(start), "…")
}

// WrapText is s wrapped at spaces into lines of at most w display columns;
// a word longer than w is split, a newline starts a new line.
func WrapText(s string, w int) []string { return wrapWords(s, w, true) }

// wrapWords wraps s at spaces to w columns, splitting words longer than w
// when split is set (else such a word stands alone on its line).
func wrapWords(s string, w int, split bool) []string {
	w = max(w, 1)
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		if runewidth.StringWidth(para) <= w {
			lines = append(lines, para)
			continue
		}
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "" && runewidth.StringWidth(word) <= w:
				line = word
			case line != "" && runewidth.StringWidth(line)+1+runewidth.StringWidth(word) <= w:
				line += " " + word
			default:
				if line != "" {
					lines = append(lines, line)
				}
				parts := []string{word}
				if split {
					parts = splitWidth(word, w)
				}
				lines = append(lines, parts[:len(parts)-1]...)
				line = parts[len(parts)-1]
			}
		}
		lines = append(lines, line)
	}
	return lines
}

// WriteText writes a line of prose wrapped at spaces to width display
// columns (0: as it is), its continuation lines indented by hang. A word
// wider than the width (a path, a URL) is not split: it stands whole on
// its line, to be copied.
func WriteText(w io.Writer, text, hang string, width int) {
	if width <= 0 {
		_, _ = io.WriteString(w, text+"\n")
		return
	}
	lines := wrapWords(text, width, false)
	if len(lines) > 1 {
		rest := strings.Join(lines[1:], " ")
		lines = append(lines[:1], wrapWords(rest, width-runewidth.StringWidth(hang), false)...)
	}
	for i, l := range lines {
		if i > 0 {
			l = hang + l
		}
		_, _ = io.WriteString(w, l+"\n")
	}
}

// splitWidth cuts a word into pieces of at most w columns, a path after
// a slash where one falls in the second half of a piece (a character
// wider than w is a piece of its own).
func splitWidth(word string, w int) []string {
	var parts []string
	for runewidth.StringWidth(word) > w {
		head := runewidth.Truncate(word, w, "")
		if i := strings.LastIndexByte(head, '/'); i+1 > len(head)/2 && i+1 < len(head) {
			head = head[:i+1]
		}
		if head == "" {
			head = word[:firstCluster(word)]
		}
		parts = append(parts, head)
		word = word[len(head):]
	}
	if word == "" && len(parts) > 0 {
		return parts
	}
	return append(parts, word)
}

// firstCluster is the length in bytes of the first character of s with
// the zero-width marks that follow it.
func firstCluster(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if runewidth.RuneWidth(r) != 0 {
			break
		}
		n += size
	}
	return n
}
