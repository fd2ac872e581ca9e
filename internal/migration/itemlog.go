package migration

import "sync"

// ItemLog keeps the STAC items Promote wrote in this process, with what
// the tree needs of each (dataset, extent), so that the run's
// Tree.Reconcile links them without reading each back: one GET per file
// saved (docs/decisions/0109). At most max are kept; the rest are read as
// before.
type ItemLog struct {
	mu      sync.Mutex
	max     int
	entries map[string]TreeEntry
}

// DefaultItemLogEntries bounds an ItemLog (about 150 bytes each).
const DefaultItemLogEntries = 200_000

// NewItemLog keeps up to max items.
func NewItemLog(max int) *ItemLog {
	return &ItemLog{max: max, entries: map[string]TreeEntry{}}
}

func (l *ItemLog) add(e TreeEntry) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.entries[e.Key]; ok || len(l.entries) < l.max {
		l.entries[e.Key] = e
	}
}

func (l *ItemLog) get(key string) (TreeEntry, bool) {
	if l == nil {
		return TreeEntry{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[key]
	return e, ok
}

// WithItemLog makes Promote note each item it writes in l; returns p.
func (p *Promote) WithItemLog(l *ItemLog) *Promote {
	p.items = l
	return p
}

// WithItemLog makes Reconcile take the items in l as they were written
// instead of reading them; returns t.
func (t *Tree) WithItemLog(l *ItemLog) *Tree {
	t.items = l
	return t
}
