package asl

import (
	"context"
	"sync"
)

// runParallel runs every branch concurrently on the same input. The output
// is the array of branch outputs in branch order; the first branch failure
// cancels the others and becomes the state's failure.
func (x *execution) runParallel(ctx context.Context, st *State, input any) (any, *failure) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]any, len(st.Branches))
	var (
		mu    sync.Mutex
		first *failure
		wg    sync.WaitGroup
	)
	for i, b := range st.Branches {
		wg.Go(func() {
			out, _, f := x.runMachine(ctx, b, input, nil)
			if f == nil {
				results[i] = out
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = f
				cancel()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return results, nil
}
