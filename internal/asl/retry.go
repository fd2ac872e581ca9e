package asl

import (
	"context"
	"math"
	"time"
)

// runWithRetry runs a Task, Parallel or Map state with its Retry and Catch
// policies. Each retrier keeps its own attempt counter; the first retrier
// whose ErrorEquals matches decides, and once it is exhausted the error
// goes to Catch even if a later retrier would also match (AWS semantics).
func (x *execution) runWithRetry(ctx context.Context, st *State, input any, entered time.Time) (any, string, *failure) {
	attempts := make([]int, len(st.Retry))
	retryCount := 0
	for {
		rc := retryCount
		env := &evalEnv{input: input, mkCtx: func() any { return x.contextObject(st, entered, rc) }, rand: x.e.random}
		out, f := x.attempt(ctx, st, input, env, retryCount)
		if f == nil {
			return out, "", nil
		}
		if f.terminal() {
			return nil, "", f
		}
		if i := matchRetrier(st.Retry, f.Error); i >= 0 && attempts[i] < st.Retry[i].MaxAttempts {
			attempts[i]++
			retryCount++
			wait := time.Duration(float64(retryDelay(st.Retry[i], attempts[i], x.e.random)) * x.e.retryScale)
			x.emit(Event{Type: EventRetryScheduled, State: st.Name, Error: f.Error, Cause: f.Cause, Attempt: retryCount, Wait: wait})
			if sf := x.sleep(ctx, wait); sf != nil {
				return nil, "", sf
			}
			continue
		}
		for _, c := range st.Catch {
			if !errorMatches(c.ErrorEquals, f.Error) {
				continue
			}
			out, err := resultPath(c.ResultPath, input, map[string]any{"Error": f.Error, "Cause": f.Cause})
			if err != nil {
				return nil, "", &failure{Error: ErrResultPathMatchFailure, Cause: err.Error()}
			}
			x.emit(Event{Type: EventCatchTaken, State: st.Name, Error: f.Error, Cause: f.Cause, Output: encodeValue(out)})
			return out, c.Next, nil
		}
		return nil, "", f
	}
}

func matchRetrier(rs []Retrier, name string) int {
	for i, r := range rs {
		if errorMatches(r.ErrorEquals, name) {
			return i
		}
	}
	return -1
}

// retryDelay is the wait before retry n (1-based) of retrier r:
// IntervalSeconds * BackoffRate^(n-1), capped at MaxDelaySeconds, then
// with FULL jitter drawn uniformly from [0, that value).
func retryDelay(r Retrier, n int, random func() float64) time.Duration {
	secs := float64(r.IntervalSeconds) * math.Pow(r.BackoffRate, float64(n-1))
	if r.MaxDelaySeconds > 0 {
		secs = math.Min(secs, float64(r.MaxDelaySeconds))
	}
	if r.JitterStrategy == "FULL" {
		secs *= random()
	}
	return time.Duration(secs * float64(time.Second))
}

// attempt runs one try of a Task, Parallel or Map state, input and output
// processing included, so that failures there are retried and caught too.
func (x *execution) attempt(ctx context.Context, st *State, input any, env *evalEnv, retryCount int) (any, *failure) {
	var (
		result any
		f      *failure
	)
	switch st.Type {
	case typeTask:
		eff, pf := effectiveInput(st, input, env)
		if pf != nil {
			return nil, pf
		}
		result, f = x.runTask(ctx, st, eff, env, retryCount)
	case typeParallel:
		eff, pf := effectiveInput(st, input, env)
		if pf != nil {
			return nil, pf
		}
		result, f = x.runParallel(ctx, st, eff)
	case typeMap:
		eff, err := inputPath(st.InputPath, input, env)
		if err != nil {
			return nil, runtimeFailure("%v", err)
		}
		env.input = eff
		result, f = x.runMap(ctx, st, eff, env)
	}
	if f != nil {
		return nil, f
	}
	return finishOutput(st, input, result, env)
}
