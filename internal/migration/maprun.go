package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// MapRunResults is what a Distributed Map with a ResultWriter answers (AWS
// Step Functions Developer Guide, "ResultWriter (Map)"): where the Map
// Run's manifest.json is. The EXPRESS backfill hands it to ExecutionFailed
// after each Map, because Express children send no status-change events.
type MapRunResults struct {
	MapRunArn           string `json:"MapRunArn,omitempty"`
	ResultWriterDetails struct {
		Bucket string `json:"Bucket"`
		Key    string `json:"Key"`
	} `json:"ResultWriterDetails"`
}

// MapRunClosed counts what CloseMapRun did with each ended child, by
// ExecutionFailed's outcome.
type MapRunClosed struct {
	Children int            `json:"children"`
	Outcomes map[string]int `json:"outcomes,omitempty"`
}

// mapRunEntry is one child execution in a result file: the DescribeExecution
// fields, Input as the JSON text it was given.
type mapRunEntry struct {
	ExecutionArn string          `json:"ExecutionArn"`
	Input        json.RawMessage `json:"Input"`
	Status       string          `json:"Status"`
	Error        string          `json:"Error"`
	Cause        string          `json:"Cause"`
	StartDate    json.RawMessage `json:"StartDate"`
	StopDate     json.RawMessage `json:"StopDate"`
}

// CloseMapRun reads a Map Run's result files and closes, through Close, the
// job of every child that ended unfinished: timed out, aborted, or failed
// other than by Classify's routes (Close ignores Routed.*). Succeeded and
// pending children are not read. Close's idempotence holds here too: a job
// that completed, or that another execution holds now, is left alone, and a
// second pass over the same results sends nothing more. A child whose close
// fails does not stop the others; the pass then fails as a TransientError,
// so the Task's retry goes over the results again.
func (h *ExecutionFailed) CloseMapRun(ctx context.Context, in MapRunResults) (MapRunClosed, error) {
	out := MapRunClosed{Outcomes: map[string]int{}}
	bucket, key := in.ResultWriterDetails.Bucket, in.ResultWriterDetails.Key
	if h.store == nil || bucket == "" || key == "" {
		return out, fault.Systemic("migration.CloseMapRun", fmt.Errorf("no results manifest (bucket %q, key %q) or no store", bucket, key))
	}
	var manifest struct {
		ResultFiles map[string][]struct {
			Key string `json:"Key"`
		} `json:"ResultFiles"`
	}
	if err := h.readJSON(ctx, bucket, key, &manifest); err != nil {
		return out, fault.Transient("migration.CloseMapRun", fmt.Errorf("manifest s3://%s/%s: %w", bucket, key, err))
	}
	var failures []error
	for group, files := range manifest.ResultFiles {
		// Results are grouped by status; only the ended-unsucceeded ones
		// can hold an unfinished job.
		if group == "SUCCEEDED" || group == "PENDING" {
			continue
		}
		for _, f := range files {
			var entries []mapRunEntry
			if err := h.readJSON(ctx, bucket, f.Key, &entries); err != nil {
				failures = append(failures, fmt.Errorf("result file s3://%s/%s: %w", bucket, f.Key, err))
				continue
			}
			for _, e := range entries {
				out.Children++
				res, err := h.Close(ctx, endedChild(e))
				if err != nil {
					failures = append(failures, fmt.Errorf("%s: %w", e.ExecutionArn, err))
					continue
				}
				out.Outcomes[res.Outcome]++
			}
		}
	}
	h.log.InfoContext(ctx, "migration.CloseMapRun", slog.String("map_run", in.MapRunArn), slog.Int("children", out.Children),
		slog.Any("outcomes", out.Outcomes), slog.Int("failures", len(failures)))
	if len(failures) > 0 {
		return out, fault.Transient("migration.CloseMapRun", errors.Join(failures...))
	}
	return out, nil
}

// endedChild is a result entry as Close takes it. An input Close cannot
// read a source from leaves the source empty: Close ignores it.
func endedChild(e mapRunEntry) EndedExecution {
	ended := EndedExecution{Execution: e.ExecutionArn, Status: e.Status, Error: e.Error, Cause: e.Cause,
		StartedAt: resultDate(e.StartDate), StoppedAt: resultDate(e.StopDate)}
	input := []byte(e.Input)
	var text string
	if json.Unmarshal(e.Input, &text) == nil {
		input = []byte(text)
	}
	if src, ok := SourceFromExecutionInput(input); ok {
		ended.Source = src
	}
	return ended
}

// resultDate reads a date of a result entry: an RFC 3339 string, or epoch
// milliseconds as DescribeExecution's JSON gives them. Unreadable: zero,
// which widens Close's search instead of narrowing it wrongly.
func resultDate(raw json.RawMessage) time.Time {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC()
		}
		return time.Time{}
	}
	if ms, err := strconv.ParseFloat(string(raw), 64); err == nil && ms > 0 {
		return time.UnixMilli(int64(ms)).UTC()
	}
	return time.Time{}
}

func (h *ExecutionFailed) readJSON(ctx context.Context, bucket, key string, v any) error {
	rc, err := h.store.Open(ctx, bucket, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	return json.NewDecoder(rc).Decode(v)
}

// HandleInvocation is the executionfailed function's handler: an EventBridge
// status-change event of a Standard migrate execution (Handle), or a Map
// Run's results from the EXPRESS backfill (CloseMapRun), told apart by the
// results' ResultWriterDetails member.
func (h *ExecutionFailed) HandleInvocation(ctx context.Context, payload json.RawMessage) (any, error) {
	var probe struct {
		ResultWriterDetails json.RawMessage `json:"ResultWriterDetails"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return nil, fault.Systemic("migration.HandleInvocation", err)
	}
	if probe.ResultWriterDetails != nil {
		var in MapRunResults
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, fault.Systemic("migration.HandleInvocation", err)
		}
		return h.CloseMapRun(ctx, in)
	}
	var ev ExecutionStatusChange
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fault.Systemic("migration.HandleInvocation", err)
	}
	return h.Handle(ctx, ev)
}
