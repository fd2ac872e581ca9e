package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/migration"
)

// Fetcher reads the stored document. Revision identifies what was read (a
// file's modification time and size, an SSM parameter's version): the same
// revision is not parsed twice.
type Fetcher interface {
	Fetch(ctx context.Context) (data []byte, revision string, err error)
}

// Source is the document in force: it fetches the stored one at most once
// per TTL (0: at every call) and keeps the last good document when the
// stored one cannot be read or is refused, logging why. Before any good
// document it serves Default. It is safe for concurrent use.
type Source struct {
	fetch Fetcher
	ttl   time.Duration
	log   *slog.Logger
	now   func() time.Time

	mu        sync.Mutex
	current   *Document
	revision  string    // of current, or of the refused document last seen
	checked   time.Time // when the store was last asked
	refused   error     // why the stored document is not in force ("" once it is)
	haveFetch bool
}

// Option configures a Source.
type Option func(*Source)

// WithClock makes the Source read time from now (tests).
func WithClock(now func() time.Time) Option { return func(s *Source) { s.now = now } }

// NewSource returns the Source of the document f fetches, re-read once ttl
// has passed since the last fetch. Load it once first to refuse a bad
// document at start.
func NewSource(f Fetcher, ttl time.Duration, log *slog.Logger, opts ...Option) *Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Source{fetch: f, ttl: ttl, log: log, now: time.Now, current: Default()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Static is a Source that always serves d (tests, and runs given no
// document).
func Static(d *Document) *Source {
	return &Source{current: d, ttl: -1}
}

// Load fetches the stored document now, whatever the TTL. An unreadable or
// refused document is returned as the error (an *InvalidError when the
// schema refused it) and the document in force stays as it was.
func (s *Source) Load(ctx context.Context) (*Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refresh(ctx)
	return s.current, err
}

// Current returns the document in force, fetching the stored one when the
// TTL has passed. It never fails: a document that cannot be read or is
// refused leaves the last good one in force (logged once per revision).
func (s *Source) Current(ctx context.Context) *Document {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fetch != nil && s.ttl >= 0 && (!s.haveFetch || s.now().Sub(s.checked) >= s.ttl) {
		_ = s.refresh(ctx) // logged by refresh
	}
	return s.current
}

// Refused says why the stored document is not the one in force (nil when
// it is).
func (s *Source) Refused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// RulesFor implements migration.RuleBook with the document in force.
func (s *Source) RulesFor(ctx context.Context, datasetID string) []migration.Rule {
	return s.Current(ctx).RulesFor(datasetID)
}

// JobDeadline implements migration.JobDeadline with the document in force.
func (s *Source) JobDeadline(ctx context.Context) time.Duration {
	return s.Current(ctx).JobDeadline()
}

// ContainerLimits implements migration.ContainerLimitsSource: the
// configured limits with the document's large_objects in their place.
func (s *Source) ContainerLimits(ctx context.Context, configured migration.ContainerLimits) migration.ContainerLimits {
	lo := s.Current(ctx).LargeObjects
	if lo == nil {
		return configured
	}
	if lo.Bytes > 0 {
		configured.Bytes = lo.Bytes
	}
	if lo.Pixels > 0 {
		configured.PixelsBands = lo.Pixels
	}
	if lo.Features > 0 {
		configured.Features = lo.Features
	}
	return configured
}

// refresh fetches and, for a new revision, parses the stored document;
// s.mu is held.
func (s *Source) refresh(ctx context.Context) error {
	if s.fetch == nil {
		return nil
	}
	s.checked, s.haveFetch = s.now(), true
	data, rev, err := s.fetch.Fetch(ctx)
	if err != nil {
		err = fmt.Errorf("policy.Source: %w", err)
		// A store that cannot be reached is not a new revision: say so
		// each time, at warning level, and keep what is in force.
		s.log.WarnContext(ctx, "policy document not read; the one in force stays", slog.String("error", err.Error()))
		return err
	}
	if rev != "" && rev == s.revision {
		return s.refused
	}
	s.revision = rev
	d, err := Parse(data)
	if err != nil {
		s.refused = fmt.Errorf("policy.Source: revision %s: %w", rev, err)
		s.log.ErrorContext(ctx, "policy document refused; the last good one stays in force",
			slog.String("revision", rev), slog.String("error", s.refused.Error()))
		return s.refused
	}
	s.current, s.refused = d, nil
	s.log.InfoContext(ctx, "policy document in force", slog.String("revision", rev))
	return nil
}

// File fetches a document from a local file; its revision is a hash of
// its content (a document is a few KB), so an edit is seen at the next
// check however close in time to the last one.
type File struct{ Path string }

// Fetch implements Fetcher.
func (f File) Fetch(context.Context) ([]byte, string, error) {
	fi, err := os.Stat(f.Path)
	if err != nil {
		return nil, "", fmt.Errorf("policy.File: %w", err)
	}
	if fi.Size() > MaxBytes {
		return nil, "", fmt.Errorf("policy.File: %s: %d bytes, more than %d", f.Path, fi.Size(), MaxBytes)
	}
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, "", fmt.Errorf("policy.File: %w", err)
	}
	if len(data) == 0 {
		return nil, "", errors.New("policy.File: " + f.Path + " is empty")
	}
	sum := sha256.Sum256(data)
	return data, "sha256:" + hex.EncodeToString(sum[:8]), nil
}
