package asl

import (
	"context"
	"fmt"
	"sync"
)

// runMap runs a Map state (INLINE, or DISTRIBUTED run inline) on the
// effective input eff; env.input is eff.
func (x *execution) runMap(ctx context.Context, st *State, eff any, env *evalEnv) (any, *failure) {
	items, f := x.mapItems(ctx, st, env)
	if f != nil {
		return nil, f
	}
	maxConc, f := optionalInt(env, st.MaxConcurrency, st.MaxConcurrencyPath, "MaxConcurrencyPath")
	if f != nil {
		return nil, f
	}
	// Each item's input is selected as its iteration starts, and an item
	// the ItemReader listed is let go then: the Map holds the listing, not
	// a second copy of it. Items selected by ItemsPath are the input's own.
	owned := st.ItemReader != nil
	var mapCtx map[string]any
	if st.ItemSelector != nil {
		mapCtx = env.context().(map[string]any) // built here, once: inputAt may run in the iterations
	}
	inputAt := func(i int) (any, *failure) {
		item := items[i]
		if owned {
			items[i] = nil
		}
		if st.ItemSelector == nil {
			return item, nil
		}
		ctxObj := shallowCopy(mapCtx)
		ctxObj["Map"] = map[string]any{"Item": map[string]any{"Index": intValue(i), "Value": item}}
		ienv := &evalEnv{input: eff, ctx: ctxObj, rand: env.rand}
		v, err := ienv.expandTemplate(st.ItemSelector)
		if err != nil {
			return nil, runtimeFailure("ItemSelector: %v", err)
		}
		return v, nil
	}
	n := len(items)
	if st.ItemBatcher != nil {
		inputs := make([]any, n)
		for i := range n {
			if inputs[i], f = inputAt(i); f != nil {
				return nil, f
			}
		}
		if inputs, f = batchItems(st.ItemBatcher, inputs, env); f != nil {
			return nil, f
		}
		n, inputAt = len(inputs), func(i int) (any, *failure) {
			in := inputs[i]
			inputs[i] = nil
			return in, nil
		}
	}
	distributed := st.ItemProcessor.ProcessorConfig != nil && st.ItemProcessor.ProcessorConfig.Mode == "DISTRIBUTED"
	tol, f := mapTolerance(st, env)
	if f != nil {
		return nil, f
	}
	var sink ResultSink
	if distributed && st.ResultWriter != nil {
		if open, ok := x.e.resultWriters[st.ResultWriter.Resource]; ok {
			if sink, f = x.openResultSink(ctx, st, open, env); f != nil {
				return nil, f
			}
		}
	}
	results, failed, f := x.runIterations(ctx, st, n, inputAt, maxConc, distributed, tol, sink)
	if f == nil && distributed && tol.exceeded(failed, n) {
		f = &failure{Error: ErrExceedToleratedFailureThreshold, Cause: fmt.Sprintf("the specified tolerated failure threshold was exceeded: %d of %d items failed", failed, n)}
	}
	if sink != nil {
		if f != nil {
			sink.Discard()
			return nil, f
		}
		raw, err := sink.Finish(ctx)
		if err != nil {
			return nil, &failure{Error: ErrResultWriterFailed, Cause: serviceFailure(err).Cause}
		}
		out, err := decodeValue(raw)
		if err != nil {
			return nil, &failure{Error: ErrResultWriterFailed, Cause: fmt.Sprintf("result writer returned invalid JSON: %v", err)}
		}
		return out, nil
	}
	if f != nil {
		return nil, f
	}
	if st.ResultWriter != nil && st.ResultWriter.Resource != "" {
		if fn, ok := x.e.resources[st.ResultWriter.Resource]; ok {
			return x.writeResults(ctx, st, fn, results, env)
		}
	}
	return results, nil
}

// runIterations runs the item processor over the n inputs inputAt gives
// with at most maxConc iterations at a time (0 means unbounded). Inline,
// the first failure cancels the rest and fails the state. Distributed,
// failures are counted and the failed item's result is its
// {"Error","Cause"} object; the run stops early once the tolerance is
// exceeded. With a sink, each result goes to it as its iteration ends and
// none is returned.
func (x *execution) runIterations(ctx context.Context, st *State, n int, inputAt func(int) (any, *failure), maxConc int, distributed bool, tol tolerance, sink ResultSink) ([]any, int, *failure) {
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	if maxConc <= 0 || maxConc > n {
		maxConc = max(n, 1)
	}
	// A distributed Map's iterations are child executions: the parent's
	// history keeps none of their events (AWS keeps them in the children).
	ix := x
	if distributed {
		ix = x.unrecordedTwin()
	}
	sem := make(chan struct{}, maxConc)
	var results []any
	if sink == nil {
		results = make([]any, n)
	}
	var (
		mu     sync.Mutex
		first  *failure
		failed int
		wg     sync.WaitGroup
	)
	// keep records one item's result; the caller holds mu.
	keep := func(i int, v any, isFailure bool) {
		if sink == nil {
			results[i] = v
			return
		}
		if first != nil {
			return
		}
		if err := sink.Add(encodeValue(v), isFailure); err != nil {
			first = &failure{Error: ErrResultWriterFailed, Cause: serviceFailure(err).Cause}
			cancel()
		}
	}
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ictx.Done():
		}
		if ictx.Err() != nil {
			break
		}
		in, f := inputAt(i)
		if f != nil {
			mu.Lock()
			if first == nil {
				first = f
			}
			mu.Unlock()
			cancel()
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			encIn := encodeValue(in)
			ix.emit(Event{Type: EventMapIterationStarted, State: st.Name, Index: i, Input: encIn})
			out, encOut, f := ix.runMachine(ictx, st.ItemProcessor, in, encIn)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case f == nil:
				keep(i, out, false)
				ix.emit(Event{Type: EventMapIterationSucceeded, State: st.Name, Index: i, Output: encOut})
			case f.aborted || f.execTimeout:
				// Cancelled by us or by the execution; the caller sorts out which.
			default:
				ix.emit(Event{Type: EventMapIterationFailed, State: st.Name, Index: i, Error: f.Error, Cause: f.Cause})
				if !distributed {
					if first == nil {
						first = f
						cancel()
					}
					return
				}
				failed++
				keep(i, map[string]any{"Error": f.Error, "Cause": f.Cause}, true)
				if tol.exceeded(failed, n) {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if f := x.interrupted(ctx); f != nil {
		return nil, 0, f
	}
	if first != nil {
		return nil, 0, first
	}
	return results, failed, nil
}

// openResultSink opens the streaming ResultWriter with its evaluated
// Parameters.
func (x *execution) openResultSink(ctx context.Context, st *State, open ResultWriterFunc, env *evalEnv) (ResultSink, *failure) {
	params, f := resultWriterParams(st, env)
	if f != nil {
		return nil, f
	}
	sink, err := open(ctx, encodeValue(params))
	if err != nil {
		return nil, &failure{Error: ErrResultWriterFailed, Cause: serviceFailure(err).Cause}
	}
	return sink, nil
}

// tolerance is a distributed Map's failure budget. With neither field set
// no failure is tolerated.
type tolerance struct {
	count   *int
	percent *float64
}

func (t tolerance) exceeded(failed, total int) bool {
	if failed == 0 {
		return false
	}
	if t.count == nil && t.percent == nil {
		return true
	}
	if t.count != nil && failed > *t.count {
		return true
	}
	return t.percent != nil && float64(failed)*100/float64(total) > *t.percent
}

func mapTolerance(st *State, env *evalEnv) (tolerance, *failure) {
	t := tolerance{count: st.ToleratedFailureCount, percent: st.ToleratedFailurePercentage}
	if st.ToleratedFailureCountPath != "" {
		n, f := optionalInt(env, 0, st.ToleratedFailureCountPath, "ToleratedFailureCountPath")
		if f != nil {
			return t, f
		}
		t.count = &n
	}
	if st.ToleratedFailurePercentagePath != "" {
		v, err := env.dynamic(st.ToleratedFailurePercentagePath)
		p, ok := numberOf(v)
		if err != nil || !ok || p < 0 || p > 100 {
			return t, runtimeFailure("ToleratedFailurePercentagePath %q must select a number between 0 and 100", st.ToleratedFailurePercentagePath)
		}
		t.percent = &p
	}
	return t, nil
}

// mapItems selects the items: from the ItemReader handler when present,
// else from ItemsPath (default $) of the effective input.
func (x *execution) mapItems(ctx context.Context, st *State, env *evalEnv) ([]any, *failure) {
	if st.ItemReader != nil {
		return x.readItems(ctx, st.ItemReader, env)
	}
	path := st.ItemsPath
	if path == "" {
		path = "$"
	}
	v, err := env.dynamic(path)
	if err != nil {
		return nil, runtimeFailure("ItemsPath: %v", err)
	}
	items, ok := v.([]any)
	if !ok {
		return nil, runtimeFailure("ItemsPath %q must select an array, got %s", path, typeName(v))
	}
	return items, nil
}

// readItems calls the ItemReader's registered resource handler. Its output
// is the item array; an object with a Contents array (the ListObjectsV2
// shape, where an empty listing has no Contents) is accepted too. ReaderConfig.MaxItems caps the count.
func (x *execution) readItems(ctx context.Context, r *ItemReader, env *evalEnv) ([]any, *failure) {
	fn, ok := x.e.resources[r.Resource]
	if !ok {
		return nil, &failure{Error: ErrItemReaderFailed, Cause: fmt.Sprintf("asl: no handler registered for ItemReader resource %q", r.Resource)}
	}
	var params any = map[string]any{}
	if r.Parameters != nil {
		v, err := env.expandTemplate(r.Parameters)
		if err != nil {
			return nil, runtimeFailure("ItemReader.Parameters: %v", err)
		}
		params = v
	}
	out, f := callResource(ctx, fn, params)
	if f != nil {
		return nil, &failure{Error: ErrItemReaderFailed, Cause: f.Cause}
	}
	items, ok := out.([]any)
	if obj, isObj := out.(map[string]any); isObj {
		// S3 leaves Contents out of an empty listing: zero items, as a
		// Distributed Map over an empty prefix succeeds with none.
		switch c := obj["Contents"].(type) {
		case nil:
			items, ok = []any{}, true
		case []any:
			items, ok = c, true
		}
	}
	if !ok {
		return nil, &failure{Error: ErrItemReaderFailed, Cause: fmt.Sprintf("ItemReader %q returned %s, want an array of items", r.Resource, typeName(out))}
	}
	if r.ReaderConfig != nil {
		cfg, _ := decodeValue(r.ReaderConfig)
		if m, ok := cfg.(map[string]any); ok {
			if n, ok := intOf(m["MaxItems"]); ok && n > 0 && n < len(items) {
				items = items[:n]
			}
		}
	}
	return items, nil
}

// batchItems groups items into {"Items": [...], "BatchInput": ...} objects
// bounded by MaxItemsPerBatch and MaxInputBytesPerBatch.
func batchItems(b *ItemBatcher, items []any, env *evalEnv) ([]any, *failure) {
	maxItems, f := optionalInt(env, b.MaxItemsPerBatch, b.MaxItemsPerBatchPath, "MaxItemsPerBatchPath")
	if f != nil {
		return nil, f
	}
	maxBytes, f := optionalInt(env, b.MaxInputBytesPerBatch, b.MaxInputBytesPerBatchPath, "MaxInputBytesPerBatchPath")
	if f != nil {
		return nil, f
	}
	var batchInput any
	if b.BatchInput != nil {
		v, err := env.expandTemplate(b.BatchInput)
		if err != nil {
			return nil, runtimeFailure("ItemBatcher.BatchInput: %v", err)
		}
		batchInput = v
	}
	var batches []any
	var cur []any
	size := 0
	flush := func() {
		if len(cur) == 0 {
			return
		}
		batch := map[string]any{"Items": cur}
		if batchInput != nil {
			batch["BatchInput"] = batchInput
		}
		batches = append(batches, batch)
		cur, size = nil, 0
	}
	for _, it := range items {
		n := len(encodeValue(it))
		if len(cur) > 0 && ((maxItems > 0 && len(cur) >= maxItems) || (maxBytes > 0 && size+n > maxBytes)) {
			flush()
		}
		cur = append(cur, it)
		size += n
	}
	flush()
	if batches == nil {
		batches = []any{}
	}
	return batches, nil
}

// writeResults hands the results to the ResultWriter's handler: the
// evaluated Parameters object plus a "Results" array. Its output becomes
// the Map's result.
func (x *execution) writeResults(ctx context.Context, st *State, fn ResourceFunc, results []any, env *evalEnv) (any, *failure) {
	params, f := resultWriterParams(st, env)
	if f != nil {
		return nil, f
	}
	params["Results"] = results
	out, f := callResource(ctx, fn, params)
	if f != nil {
		return nil, &failure{Error: ErrResultWriterFailed, Cause: f.Cause}
	}
	return out, nil
}

// resultWriterParams evaluates the ResultWriter's Parameters (an object).
func resultWriterParams(st *State, env *evalEnv) (map[string]any, *failure) {
	params := map[string]any{}
	if st.ResultWriter.Parameters != nil {
		v, err := env.expandTemplate(st.ResultWriter.Parameters)
		if err != nil {
			return nil, runtimeFailure("ResultWriter.Parameters: %v", err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, runtimeFailure("ResultWriter.Parameters must be an object")
		}
		params = m
	}
	return params, nil
}

// optionalInt returns a static value or the non-negative integer a path
// selects.
func optionalInt(env *evalEnv, static int, path, field string) (int, *failure) {
	if path == "" {
		return static, nil
	}
	v, err := env.dynamic(path)
	if err != nil {
		return 0, runtimeFailure("%s: %v", field, err)
	}
	n, ok := intOf(v)
	if !ok || n < 0 {
		return 0, runtimeFailure("%s %q must select a non-negative integer, got %s", field, path, encodeValue(v))
	}
	return n, nil
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
