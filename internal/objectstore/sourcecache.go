package objectstore

import (
	"container/list"
	"sync"
)

// SourceCache hands the bytes of a small source, read whole once to hash
// it, to the conversion of the same job in the same process, so the
// object is fetched once instead of twice. Entries are keyed by bucket,
// key and the SHA-256 of the bytes, so a taker gets exactly the content
// its job was fingerprinted by; at most MaxBytes are held, least recently
// stored dropped first (a job skipped after hashing never takes its
// entry). Useful only where HashCheck and Convert share a process (the
// CLI); the Lambdas run them apart and leave it nil.
type SourceCache struct {
	maxBytes, maxObject int64

	mu    sync.Mutex
	used  int64
	m     map[sourceKey]*list.Element
	order *list.List // of *sourceEntry, newest first
}

type sourceKey struct{ bucket, key, sha256 string }

type sourceEntry struct {
	k    sourceKey
	data []byte
}

// NewSourceCache holds up to maxBytes in all, and no object larger than
// maxObject.
func NewSourceCache(maxBytes, maxObject int64) *SourceCache {
	return &SourceCache{maxBytes: maxBytes, maxObject: min(maxObject, maxBytes), m: map[sourceKey]*list.Element{}, order: list.New()}
}

// Fits says whether an object of size bytes would be kept.
func (c *SourceCache) Fits(size int64) bool { return c != nil && size >= 0 && size <= c.maxObject }

// Put keeps data, the whole object bucket/key whose SHA-256 is sum.
func (c *SourceCache) Put(bucket, key, sum string, data []byte) {
	if !c.Fits(int64(len(data))) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sourceKey{bucket, key, sum}
	if e, ok := c.m[k]; ok {
		c.remove(e)
	}
	c.m[k] = c.order.PushFront(&sourceEntry{k, data})
	c.used += int64(len(data))
	for c.used > c.maxBytes {
		c.remove(c.order.Back())
	}
}

// Take returns and forgets the bytes of bucket/key with SHA-256 sum.
func (c *SourceCache) Take(bucket, key, sum string) ([]byte, bool) {
	return c.get(bucket, key, sum, true)
}

// Peek returns the bytes of bucket/key with SHA-256 sum and keeps them
// for a later Take (HashCheck measures a source it is handing to Convert).
func (c *SourceCache) Peek(bucket, key, sum string) ([]byte, bool) {
	return c.get(bucket, key, sum, false)
}

func (c *SourceCache) get(bucket, key, sum string, forget bool) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[sourceKey{bucket, key, sum}]
	if !ok {
		return nil, false
	}
	if forget {
		c.remove(e)
	}
	return e.Value.(*sourceEntry).data, true
}

func (c *SourceCache) remove(e *list.Element) {
	se := e.Value.(*sourceEntry)
	c.order.Remove(e)
	delete(c.m, se.k)
	c.used -= int64(len(se.data))
}

// Held is the bytes held.
func (c *SourceCache) Held() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
