package dirstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// TestParallelDeletesAreNoConflicts: deletes prune directories that
// concurrent writes under the same prefix are filling. No write or delete
// may fail: a lost race over a directory is not a conflict between keys
// (which would be routed as a data error).
func TestParallelDeletesAreNoConflicts(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				key := fmt.Sprintf("_staging/job%d/sub/out-%d-%d.tif", i%3, w, i)
				if _, err := s.Put(ctx, objectstore.PutRequest{Bucket: "b", Key: key, Body: strings.NewReader("x"), Size: 1}); err != nil {
					errs <- err
					return
				}
				if err := s.Delete(ctx, "b", key); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
