package localrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Outcomes are a run's outcomes, spooled to a temporary file as they end
// (one JSON line each) with their totals counted, so that a run over a
// million files holds counters, not a million outcomes; the report reads
// them back from the file as it is written. A backfill's are read back in
// the order they ended; a migrate's (NewOrderedOutcomes) in input order,
// by the place of each line in the file.
type Outcomes struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	buf    bytes.Buffer
	enc    *json.Encoder // into buf
	size   int64         // bytes written to f
	n      int
	totals Totals
	// at is, with NewOrderedOutcomes, where each input's line is in the
	// file (16 bytes per input: the one thing held per file).
	at  []span
	err error // the first write error: Each and All report it
}

// span is where one outcome's line is in the spool; n 0: not put yet.
type span struct {
	off int64
	n   int64
}

// spooledOutcome is an Outcome as one line of the spool: StagingPrefix,
// kept out of the report, round-trips too.
type spooledOutcome struct {
	Outcome
	Staging string `json:"staging_prefix,omitempty"`
}

func newOutcomes() (*Outcomes, error) {
	f, err := os.CreateTemp("", "geomigrate-outcomes-*.jsonl")
	if err != nil {
		return nil, fmt.Errorf("localrun.Outcomes: %w", err)
	}
	s := &Outcomes{f: f, w: bufio.NewWriter(f)}
	s.enc = json.NewEncoder(&s.buf)
	return s, nil
}

// NewOrderedOutcomes is a spool for n outcomes put by their index (Put),
// read back in index order whatever the order they ended in.
func NewOrderedOutcomes(n int) (*Outcomes, error) {
	s, err := newOutcomes()
	if err != nil {
		return nil, err
	}
	s.at = make([]span, n)
	return s, nil
}

// add spools one outcome; a routed outcome without a hint gets
// HintUnclassified, as NewReport gives it.
func (s *Outcomes) add(o Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(WithHint(o))
}

// Put spools the outcome of input i of an ordered spool; a routed outcome
// without a hint gets HintUnclassified, as NewReport gives it.
func (s *Outcomes) Put(i int, o Outcome) {
	o = WithHint(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.at) || s.at[i].n != 0 {
		if s.err == nil {
			s.err = fmt.Errorf("outcome %d: out of range or put twice", i)
		}
		return
	}
	at := s.size
	if s.write(o) {
		s.at[i] = span{off: at, n: s.size - at}
	}
}

// write spools o at the end of the file; false once a write has failed.
func (s *Outcomes) write(o Outcome) bool {
	s.n++
	s.totals.Add(o)
	if s.err != nil {
		return false
	}
	s.buf.Reset()
	if s.err = s.enc.Encode(spooledOutcome{Outcome: o, Staging: o.StagingPrefix}); s.err != nil {
		return false
	}
	n, err := s.w.Write(s.buf.Bytes())
	s.size += int64(n)
	s.err = err
	return err == nil
}

// Len is the number of outcomes spooled.
func (s *Outcomes) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Totals counts the outcomes spooled.
func (s *Outcomes) Totals() Totals {
	if s == nil {
		return Totals{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

// Each calls fn with every outcome spooled: in input order for an ordered
// spool (every input must have been put), else in the order they ended.
func (s *Outcomes) Each(fn func(Outcome) error) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	err := s.err
	if err == nil {
		err = s.w.Flush()
	}
	n, ordered := s.n, s.at != nil
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("localrun.Outcomes.Each: %w", err)
	}
	// A reader of its own: the spool may still be written after this.
	f, err := os.Open(s.f.Name())
	if err != nil {
		return fmt.Errorf("localrun.Outcomes.Each: %w", err)
	}
	defer f.Close()
	if ordered {
		return s.eachInOrder(f, fn)
	}
	dec := json.NewDecoder(bufio.NewReader(f))
	for range n {
		var o spooledOutcome
		if err := dec.Decode(&o); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("localrun.Outcomes.Each: %w", err)
		}
		o.StagingPrefix = o.Staging
		if err := fn(o.Outcome); err != nil {
			return err
		}
	}
	return nil
}

// eachInOrder reads an ordered spool's lines by their spans.
func (s *Outcomes) eachInOrder(f *os.File, fn func(Outcome) error) error {
	var line []byte
	for i := range s.at {
		s.mu.Lock()
		at := s.at[i]
		s.mu.Unlock()
		if at.n == 0 {
			return fmt.Errorf("localrun.Outcomes.Each: outcome %d of %d was never put", i, len(s.at))
		}
		if int64(cap(line)) < at.n {
			line = make([]byte, at.n)
		}
		line = line[:at.n]
		if _, err := f.ReadAt(line, at.off); err != nil {
			return fmt.Errorf("localrun.Outcomes.Each: %w", err)
		}
		var o spooledOutcome
		if err := json.Unmarshal(line, &o); err != nil {
			return fmt.Errorf("localrun.Outcomes.Each: outcome %d: %w", i, err)
		}
		o.StagingPrefix = o.Staging
		if err := fn(o.Outcome); err != nil {
			return err
		}
	}
	return nil
}

// All reads every outcome back into memory (tests, small runs).
func (s *Outcomes) All() ([]Outcome, error) {
	var out []Outcome
	err := s.Each(func(o Outcome) error { out = append(out, o); return nil })
	return out, err
}

// Close removes the spool file.
func (s *Outcomes) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.f.Close()
	if rmErr := os.Remove(s.f.Name()); err == nil {
		err = rmErr
	}
	return err
}
