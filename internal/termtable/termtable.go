// Package termtable lays out the CLI's column tables to fit a terminal's
// width, so that the terminal never wraps a row: cells are measured in
// display columns (github.com/mattn/go-runewidth: wide CJK characters,
// combining marks, emoji), the columns that may give way are narrowed,
// widest first (free text wrapped within its column, keys and paths cut in
// the middle with …, where both ends say something), and a table still too
// wide is printed in bands of columns with its key columns repeated in
// each, so every count stays on the screen. Width 0 is no limit: whole
// rows, as text/tabwriter writes them, for a pipe or a file
// (docs/decisions/0107).
//
// github.com/jedib0t/go-pretty and github.com/olekukonko/tablewriter were
// not taken: they cap a column at a width fixed beforehand or cut a row's
// end, where fitting needs the room the other columns leave in this table.
package termtable

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// Width is the width tables written to w must fit: $COLUMNS when it holds
// a positive number (as GNU ls reads it), else the terminal's width when w
// is one, else 0: no limit (a pipe or a file gets whole rows, for grep and
// scripts).
func Width(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 0
}

// Fit is how a column gives way when the table is too wide.
type Fit int

const (
	// Keep never narrows the column while another can give way: counts,
	// sizes, statuses, labels.
	Keep Fit = iota
	// Middle cuts the cell in the middle with …: keys and paths, whose
	// start (the dataset) and end (the file name) both matter.
	Middle
	// End cuts the cell at its end with ….
	End
	// Wrap wraps the cell at spaces within the column (a word longer than
	// the column is split); a newline in the cell starts a new line.
	Wrap
)

// Column is one column of a table.
type Column struct {
	Header string
	Right  bool // aligned right (numbers)
	Fit    Fit
	// Key columns name the row: repeated in every band of a table split
	// in bands.
	Key bool
}

// gap is the spaces between two columns (as tabwriter's padding 2).
const gap = 2

// shrinkMin is the narrowest a column that gives way is made before the
// table is split in bands (or its header, when wider).
const shrinkMin = 12

// Table is rows of cells under columns, written at a width.
type Table struct {
	indent  string
	columns []Column
	rows    [][]string
	// notes are lines printed whole under a row (by row index).
	notes map[int]noteLine
}

// New returns an empty table whose lines start with indent.
func New(indent string, columns ...Column) *Table {
	return &Table{indent: indent, columns: columns}
}

// Add appends a row; missing cells are empty, extra ones dropped.
func (t *Table) Add(cells ...string) {
	row := make([]string, len(t.columns))
	copy(row, cells)
	t.rows = append(t.rows, row)
}

// noteLine is a line under a row, starting at a column.
type noteLine struct {
	col  int
	text string
}

// Note puts text on a line of its own under the last row added, starting
// where column col starts, never cut or wrapped: a path to be copied
// (docs/decisions/0107). It is shown in the first band only.
func (t *Table) Note(col int, text string) {
	if t.notes == nil {
		t.notes = map[int]noteLine{}
	}
	t.notes[len(t.rows)-1] = noteLine{col: col, text: text}
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Write writes the table fitted to width display columns (0: no limit).
func (t *Table) Write(w io.Writer, width int) error {
	var b strings.Builder
	for i, band := range t.bands(width) {
		if i > 0 {
			b.WriteString("\n")
		}
		t.writeBand(&b, band, i == 0, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// band is the columns printed together and their widths.
type band struct {
	cols   []int
	widths []int
}

func (t *Table) hasHeader() bool {
	for _, c := range t.columns {
		if c.Header != "" {
			return true
		}
	}
	return false
}

// natural is the width column i takes uncut.
func (t *Table) natural(i int) int {
	n := runewidth.StringWidth(t.columns[i].Header)
	for _, r := range t.rows {
		for _, l := range strings.Split(r[i], "\n") {
			n = max(n, runewidth.StringWidth(l))
		}
	}
	return n
}

// narrowest is the width column i may be narrowed to before the table is
// split in bands.
func (t *Table) narrowest(i int, natural int) int {
	if t.columns[i].Fit == Keep {
		return natural
	}
	return min(natural, max(shrinkMin, runewidth.StringWidth(t.columns[i].Header)))
}

// bands splits the columns into bands that fit width, each holding the key
// columns and as many others, in order, as fit narrowed.
func (t *Table) bands(width int) []band {
	natural := make([]int, len(t.columns))
	floor := make([]int, len(t.columns))
	// Bands are cut where the columns no longer fit with wrapped text
	// at its longest word (fit may go narrower, down to floor).
	soft := make([]int, len(t.columns))
	for i := range t.columns {
		natural[i] = t.natural(i)
		floor[i] = t.narrowest(i, natural[i])
		soft[i] = floor[i]
		if t.columns[i].Fit == Wrap {
			soft[i] = max(floor[i], min(natural[i], t.longestWord(i)))
		}
	}
	all := make([]int, len(t.columns))
	for i := range all {
		all[i] = i
	}
	if width <= 0 || t.span(all, soft) <= width {
		return []band{t.fit(all, natural, floor, width)}
	}
	var keys, others []int
	for i, c := range t.columns {
		if c.Key {
			keys = append(keys, i)
		} else {
			others = append(others, i)
		}
	}
	if len(others) == 0 {
		return []band{t.fit(all, natural, floor, width)}
	}
	var out []band
	for len(others) > 0 {
		cols := append(append([]int{}, keys...), others[0])
		n := 1
		for ; n < len(others); n++ {
			next := append(append([]int{}, cols...), others[n])
			if t.span(sorted(next), soft) > width {
				break
			}
			cols = next
		}
		others = others[n:]
		out = append(out, t.fit(sorted(cols), natural, floor, width))
	}
	return out
}

// sorted puts a band's columns back in the table's order.
func sorted(cols []int) []int {
	for i := 1; i < len(cols); i++ {
		for j := i; j > 0 && cols[j] < cols[j-1]; j-- {
			cols[j], cols[j-1] = cols[j-1], cols[j]
		}
	}
	return cols
}

// span is the width of a line of cols at widths w.
func (t *Table) span(cols []int, w []int) int {
	n := runewidth.StringWidth(t.indent)
	for k, i := range cols {
		if k > 0 {
			n += gap
		}
		n += w[i]
	}
	return n
}

// fit narrows cols from their natural widths until they fit width, the
// widest first in each pass: wrapped text down to its longest word (at
// most wrapWord columns), as wrapping loses nothing; then cut keys down
// to their floor; then wrapped text to its floor; then, when the table
// cannot fit otherwise, any column down to one. Room a wrapped column
// does not fill once wrapped goes back to the columns that gave way.
func (t *Table) fit(cols []int, natural, floor []int, width int) band {
	w := make([]int, len(natural))
	copy(w, natural)
	if width > 0 {
		excess := t.span(cols, w) - width
		wraps := func(i int) bool { return t.columns[i].Fit == Wrap }
		cuts := func(i int) bool { return t.columns[i].Fit == Middle || t.columns[i].Fit == End }
		passes := []struct {
			may   func(int) bool
			floor func(int) int
		}{
			{wraps, func(i int) int { return max(floor[i], min(natural[i], t.longestWord(i))) }},
			{cuts, func(i int) int { return floor[i] }},
			{wraps, func(i int) int { return floor[i] }},
			{func(int) bool { return true }, func(int) int { return 1 }},
		}
		for _, p := range passes {
			for excess > 0 {
				widest := -1
				for _, i := range cols {
					if p.may(i) && w[i] > p.floor(i) && (widest < 0 || w[i] > w[widest]) {
						widest = i
					}
				}
				if widest < 0 {
					break
				}
				w[widest]--
				excess--
			}
		}
		if excess < 0 || t.span(cols, natural) > width {
			t.giveBack(cols, natural, w, width)
		}
	}
	b := band{cols: cols}
	for _, i := range cols {
		b.widths = append(b.widths, w[i])
	}
	return b
}

// wrapWord bounds the width a wrapped column keeps for its longest word
// before keys are cut.
const wrapWord = 20

// longestWord is the widest word of column i's cells, at most wrapWord.
func (t *Table) longestWord(i int) int {
	n := runewidth.StringWidth(t.columns[i].Header)
	for _, r := range t.rows {
		for _, word := range strings.Fields(r[i]) {
			n = max(n, min(runewidth.StringWidth(word), wrapWord))
		}
	}
	return n
}

// giveBack narrows each narrowed wrapped column to the lines it wraps into
// and hands the room that frees (and any left) to the narrowed columns,
// the narrowest first.
func (t *Table) giveBack(cols []int, natural, w []int, width int) {
	for _, i := range cols {
		if t.columns[i].Fit != Wrap || w[i] >= natural[i] {
			continue
		}
		used := runewidth.StringWidth(t.columns[i].Header)
		for _, r := range t.rows {
			for _, l := range WrapText(r[i], w[i]) {
				used = max(used, runewidth.StringWidth(l))
			}
		}
		w[i] = used
	}
	for room := width - t.span(cols, w); room > 0; room-- {
		narrowest := -1
		for _, i := range cols {
			if w[i] < natural[i] && (narrowest < 0 || w[i] < w[narrowest]) {
				narrowest = i
			}
		}
		if narrowest < 0 {
			return
		}
		w[narrowest]++
	}
}

func (t *Table) writeBand(b *strings.Builder, bd band, first bool, width int) {
	if t.hasHeader() {
		head := make([]string, len(t.columns))
		for i, c := range t.columns {
			head[i] = c.Header
		}
		t.writeRow(b, bd, head, true, width)
	}
	for n, r := range t.rows {
		t.writeRow(b, bd, r, false, width)
		if note, ok := t.notes[n]; ok && first {
			at := runewidth.StringWidth(t.indent)
			for k, i := range bd.cols {
				if i >= note.col {
					break
				}
				at += bd.widths[k] + gap
			}
			b.WriteString(strings.Repeat(" ", at) + note.text + "\n")
		}
	}
}

// writeRow writes one row as the lines its tallest cell needs.
func (t *Table) writeRow(b *strings.Builder, bd band, row []string, header bool, width int) {
	cells := make([][]string, len(bd.cols))
	height := 1
	for k, i := range bd.cols {
		fit := t.columns[i].Fit
		if header && fit == Wrap {
			fit = End
		}
		cells[k] = shape(row[i], bd.widths[k], fit)
		height = max(height, len(cells[k]))
	}
	for line := 0; line < height; line++ {
		var l strings.Builder
		l.WriteString(t.indent)
		for k, i := range bd.cols {
			if k > 0 {
				l.WriteString(strings.Repeat(" ", gap))
			}
			text := ""
			if line < len(cells[k]) {
				text = cells[k][line]
			}
			pad := strings.Repeat(" ", max(bd.widths[k]-runewidth.StringWidth(text), 0))
			if t.columns[i].Right {
				l.WriteString(pad + text)
			} else {
				l.WriteString(text + pad)
			}
		}
		out := strings.TrimRight(l.String(), " ")
		if width > 0 && runewidth.StringWidth(out) > width {
			// An indent or gaps wider than the width leave nothing else.
			out = runewidth.Truncate(out, width, "")
		}
		b.WriteString(out + "\n")
	}
}

// shape is a cell's lines at width w.
func shape(cell string, w int, fit Fit) []string {
	switch fit {
	case Wrap:
		return WrapText(cell, w)
	case Middle:
		return []string{CutMiddle(strings.ReplaceAll(cell, "\n", " "), w)}
	}
	cell = strings.ReplaceAll(cell, "\n", " ")
	if runewidth.StringWidth(cell) > w {
		cell = runewidth.Truncate(cell, w, "…")
	}
	return []string{cell}
}
