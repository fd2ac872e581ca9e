package localrun

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// Outcomes are a backfill's child outcomes, spooled to a temporary file as
// they end (one JSON line each) with their totals counted, so that a run
// over a million items holds counters, not a million outcomes; the report
// reads them back from the file as it is written.
type Outcomes struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	enc    *json.Encoder
	n      int
	totals Totals
	err    error // the first write error: Each and All report it
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
	w := bufio.NewWriter(f)
	return &Outcomes{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

// add spools one outcome; a routed outcome without a hint gets
// HintUnclassified, as NewReport gives it.
func (s *Outcomes) add(o Outcome) {
	o = WithHint(o)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.totals.Add(o)
	if s.err == nil {
		s.err = s.enc.Encode(spooledOutcome{Outcome: o, Staging: o.StagingPrefix})
	}
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

// Each calls fn with every outcome spooled, in the order they ended.
func (s *Outcomes) Each(fn func(Outcome) error) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	err := s.err
	if err == nil {
		err = s.w.Flush()
	}
	n := s.n
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
