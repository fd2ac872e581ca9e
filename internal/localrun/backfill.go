package localrun

// Size: the local backfill: listing or manifest reading in, results written out as the Map's ResultWriter would.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/tracing"
	"github.com/geomigrate/geomigrate/statemachine"
)

// Resources the backfill definition uses, served locally.
const (
	resourceListObjects    = "arn:aws:states:::s3:listObjectsV2"
	resourceGetObject      = "arn:aws:states:::s3:getObject"
	resourcePutObject      = "arn:aws:states:::s3:putObject"
	resourceStartExecution = "arn:aws:states:::states:startExecution.sync:2"
	// MigrateStateMachine is the local ARN of the migrate state machine.
	MigrateStateMachine = "arn:aws:states:local:000000000000:stateMachine:geomigrate-migrate"
)

// Backfill runs statemachine/backfill.asl.json locally: its Distributed Map
// lists a bucket prefix (or reads an S3 Inventory manifest) through the
// object store, runs each item as a child execution of the migrate
// executor, and writes the result files to the results bucket.
type Backfill struct {
	exec   *asl.Executor
	ended  func(ctx context.Context, e migration.EndedExecution) (migration.ExecutionFailedOutput, error)
	onDone func(Outcome)
	// outcomes is the running execution's spool (one Run at a time).
	mu       sync.Mutex
	outcomes *Outcomes
}

// BackfillConfig names the buckets the definition's placeholders stand for.
type BackfillConfig struct {
	SourceBucket  string
	ResultsBucket string
	// SourcePrefixes scope an S3 Inventory backfill as infra's sourcePrefixes
	// do on AWS: items under none of them are skipped, not run. Empty keeps
	// every key (a local source tree is readable as a whole).
	SourcePrefixes []string
	Store          objectstore.Store // lists sources, reads manifests, writes results
	Migrate        *asl.Executor     // runs each child execution
	// Ended, if set, closes the job of a child execution that ended
	// unfinished, as Runner.Ended does (on AWS the children are Standard
	// executions and executionfailed gets their events).
	Ended func(ctx context.Context, e migration.EndedExecution) (migration.ExecutionFailedOutput, error)
	// Policy is the run-time policy document the definition's ReadPolicy
	// task reads (aws-sdk:ssm:getParameter), the --policy file locally.
	// Nil: no parameter, so the input's values or the defaults apply.
	Policy policy.Fetcher
	// DeadLetter receives the message about an item whose child execution
	// could not be started (the definition's ItemNotStarted), as the
	// dead-letter queue does on AWS. Nil: the send fails, and the item is
	// recorded only as a failed item in the results.
	DeadLetter queue.Sender
	// PolicyParameter is the parameter name substituted for
	// ${PolicyParameterName}; "" is statemachine.LocalPolicyParameter.
	PolicyParameter string
	// OnDone, if set, is called with each child's outcome as it ends
	// (concurrently, from the child's goroutine): the CLI's progress lines.
	OnDone func(Outcome)
}

// ParsedBackfill is the backfill definition as the local executor runs
// it over sourceBucket, writing results to resultsBucket: the source-prefix
// filter expanded, the placeholders substituted with the local stand-ins.
// `geomigrate graph --backfill` draws it.
func ParsedBackfill(sourceBucket, resultsBucket string, sourcePrefixes []string) (*asl.StateMachine, error) {
	return parsedBackfill(sourceBucket, resultsBucket, sourcePrefixes, statemachine.LocalPolicyParameter)
}

func parsedBackfill(sourceBucket, resultsBucket string, sourcePrefixes []string, policyParameter string) (*asl.StateMachine, error) {
	def, err := statemachine.ExpandBackfill(statemachine.Backfill, sourcePrefixes)
	if err != nil {
		return nil, fmt.Errorf("localrun.ParsedBackfill: %w", err)
	}
	def, err = asl.Substitute(def, map[string]string{
		"MigrateStateMachineArn":         MigrateStateMachine,
		"SourceBucket":                   sourceBucket,
		"ResultsBucket":                  resultsBucket,
		statemachine.DeadLetterQueueURL:  DeadLetterQueueURL,
		statemachine.PolicyParameterName: policyParameter,
	})
	if err != nil {
		return nil, fmt.Errorf("localrun.ParsedBackfill: %w", err)
	}
	sm, err := asl.Parse(def)
	if err != nil {
		return nil, fmt.Errorf("localrun.ParsedBackfill: %w", err)
	}
	return sm, nil
}

// NewBackfill parses the backfill definition and binds its resources.
func NewBackfill(cfg BackfillConfig, opts ...asl.Option) (*Backfill, error) {
	if cfg.PolicyParameter == "" {
		cfg.PolicyParameter = statemachine.LocalPolicyParameter
	}
	sm, err := parsedBackfill(cfg.SourceBucket, cfg.ResultsBucket, cfg.SourcePrefixes, cfg.PolicyParameter)
	if err != nil {
		return nil, err
	}
	b := &Backfill{ended: cfg.Ended, onDone: cfg.OnDone}
	all := []asl.Option{
		asl.WithStateMachineName("geomigrate-backfill"),
		asl.WithResource(resourceListObjects, listObjects(cfg.Store)),
		asl.WithResource(resourceGetObject, readManifest(cfg.Store)),
		asl.WithResource(resourcePutObject, writeResults(cfg.Store)),
		asl.WithResultWriter(resourcePutObject, openResults(cfg.Store)),
		asl.WithResource(resourceStartExecution, b.startChild(cfg.Migrate)),
		asl.WithResource(statemachine.ResourceSSMGetParameter, ssmGetParameter(cfg.PolicyParameter, cfg.Policy)),
		asl.WithSQS(func(ctx context.Context, url, body string) (string, error) {
			if url != DeadLetterQueueURL || cfg.DeadLetter == nil {
				return "", fmt.Errorf("no local queue for %s", url)
			}
			return cfg.DeadLetter.Send(ctx, body)
		}),
	}
	b.exec = asl.NewExecutor(sm, append(all, opts...)...)
	return b, nil
}

// Run starts one backfill execution; input is {"prefix": …} or
// {"manifest": {"bucket", "key"}} with the optional fields the definition
// documents. It returns the execution result and the child outcomes,
// spooled to a temporary file as each child ended (the caller closes
// them): the run's memory does not grow with its items.
func (b *Backfill) Run(ctx context.Context, name string, input json.RawMessage) (*asl.Result, *Outcomes, error) {
	outs, err := newOutcomes()
	if err != nil {
		return nil, nil, err
	}
	b.mu.Lock()
	b.outcomes = outs
	b.mu.Unlock()
	res, err := b.exec.Run(ctx, name, input)
	b.mu.Lock()
	b.outcomes = nil
	b.mu.Unlock()
	return res, outs, err
}

// listObjects answers ListObjectsV2 the way the ItemReader reads it.
func listObjects(store objectstore.Store) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct{ Bucket, Prefix string }
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		type item struct {
			Key          string
			Size         int64
			Etag         string
			LastModified string
			StorageClass string
		}
		var items []item
		err := store.List(ctx, p.Bucket, p.Prefix, func(o objectstore.Object) error {
			items = append(items, item{Key: o.Key, Size: o.Size, Etag: `"` + o.ETag + `"`, LastModified: o.Modified.UTC().Format(time.RFC3339), StorageClass: "STANDARD"})
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listObjectsV2 %s/%s: %w", p.Bucket, p.Prefix, err)
		}
		return json.Marshal(map[string]any{"Contents": items})
	}
}

// readManifest reads an S3 Inventory manifest.json and its CSV files (gzip
// or plain) into items as the ItemReader's MANIFEST input type gives them
// on AWS: one object per row, its members named by the manifest's
// fileSchema ("Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size …"),
// every value the CSV's text as it stands. Keys stay URL-encoded as the
// inventory writes them: the definition passes them on with key_encoding
// "url" and HashCheck decodes them (migration.Source.DecodedKey), as on
// AWS, so both paths decode in one place (docs/decisions/0100). A manifest
// without fileSchema is read as Bucket, Key.
func readManifest(store objectstore.Store) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct{ Bucket, Key string }
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		var manifest struct {
			FileFormat string `json:"fileFormat"`
			FileSchema string `json:"fileSchema"`
			Files      []struct {
				Key string `json:"key"`
			} `json:"files"`
		}
		if err := readJSON(ctx, store, p.Bucket, p.Key, &manifest); err != nil {
			return nil, fmt.Errorf("manifest s3://%s/%s: %w", p.Bucket, p.Key, err)
		}
		if manifest.FileFormat != "" && manifest.FileFormat != "CSV" {
			return nil, fmt.Errorf("manifest s3://%s/%s: file format %q: only CSV inventories are read", p.Bucket, p.Key, manifest.FileFormat)
		}
		columns := []string{"Bucket", "Key"}
		if manifest.FileSchema != "" {
			columns = strings.Split(manifest.FileSchema, ",")
			for i := range columns {
				columns[i] = strings.TrimSpace(columns[i])
			}
		}
		var items []map[string]string
		for _, f := range manifest.Files {
			rows, err := readInventoryCSV(ctx, store, p.Bucket, f.Key)
			if err != nil {
				return nil, fmt.Errorf("inventory file %s: %w", f.Key, err)
			}
			for _, r := range rows {
				if len(r) < 2 {
					continue
				}
				item := make(map[string]string, len(columns))
				for i, c := range columns {
					if i < len(r) {
						item[c] = r[i]
					}
				}
				items = append(items, item)
			}
		}
		return json.Marshal(items)
	}
}

func readJSON(ctx context.Context, store objectstore.Store, bucket, key string, v any) error {
	rc, err := store.Open(ctx, bucket, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	return json.NewDecoder(rc).Decode(v)
}

func readInventoryCSV(ctx context.Context, store objectstore.Store, bucket, key string) ([][]string, error) {
	rc, err := store.Open(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var r io.Reader = bufio.NewReader(rc)
	if strings.HasSuffix(key, ".gz") {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer gz.Close()
		r = gz
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	return cr.ReadAll()
}

// resultFiles are one Map Run's result files as ResultWriter writes them
// on AWS: a manifest and the succeeded and failed items as JSON files
// under the prefix, one folder per execution. Each item is spooled to a
// temporary file as it is added, so no copy of the result set is held.
type resultFiles struct {
	store          objectstore.Store
	bucket, prefix string
	ok, failed     *resultSpool
}

func newResultFiles(store objectstore.Store, bucket, prefix string) (*resultFiles, error) {
	ok, err := newResultSpool()
	if err != nil {
		return nil, err
	}
	failed, err := newResultSpool()
	if err != nil {
		ok.close()
		return nil, err
	}
	return &resultFiles{store: store, bucket: bucket, prefix: prefix, ok: ok, failed: failed}, nil
}

// openResults is the streaming ResultWriter of s3:putObject: the Map hands
// it each item's result as the item ends.
func openResults(store objectstore.Store) asl.ResultWriterFunc {
	return func(ctx context.Context, params json.RawMessage) (asl.ResultSink, error) {
		var p struct{ Bucket, Prefix string }
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("result writer: %w", err)
		}
		r, err := newResultFiles(store, p.Bucket, p.Prefix)
		if err != nil {
			return nil, fmt.Errorf("result writer: %w", err)
		}
		return r, nil
	}
}

// Add spools one item's result.
func (r *resultFiles) Add(result json.RawMessage, failed bool) error {
	s := r.ok
	if failed {
		s = r.failed
	}
	if err := s.add(result); err != nil {
		return fmt.Errorf("result writer: %w", err)
	}
	return nil
}

// Discard removes the spools.
func (r *resultFiles) Discard() {
	r.ok.close()
	r.failed.close()
}

// Finish puts the two result files and the manifest and answers as the
// ResultWriter does: the manifest's location.
func (r *resultFiles) Finish(ctx context.Context) (json.RawMessage, error) {
	defer r.Discard()
	dir := path.Join(r.prefix, time.Now().UTC().Format("20060102T150405.000000000")) + "/"
	for _, f := range []struct {
		name  string
		spool *resultSpool
	}{{"SUCCEEDED_0.json", r.ok}, {"FAILED_0.json", r.failed}} {
		body, size, err := f.spool.finish()
		if err == nil {
			_, err = r.store.Put(ctx, objectstore.PutRequest{Bucket: r.bucket, Key: dir + f.name, Body: body, Size: size})
		}
		if err != nil {
			return nil, fmt.Errorf("result writer: %w", err)
		}
	}
	manifest := map[string]any{"DestinationBucket": r.bucket, "ResultFiles": map[string]any{
		"SUCCEEDED": []map[string]any{{"Key": dir + "SUCCEEDED_0.json", "Items": r.ok.n}},
		"FAILED":    []map[string]any{{"Key": dir + "FAILED_0.json", "Items": r.failed.n}},
	}}
	b, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("result writer: %w", err)
	}
	key := dir + "manifest.json"
	if _, err := r.store.Put(ctx, objectstore.PutRequest{Bucket: r.bucket, Key: key, Body: bytes.NewReader(b), Size: int64(len(b))}); err != nil {
		return nil, fmt.Errorf("result writer: %w", err)
	}
	return json.Marshal(map[string]any{"ResultWriterDetails": map[string]string{"Bucket": r.bucket, "Key": key}})
}

// writeResults is the same ResultWriter handed every result at once (the
// executor's way for a writer without a sink): the items are read from
// the parameters one at a time into the spools.
func writeResults(store objectstore.Store) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		r, err := newResultFiles(store, "", "")
		if err != nil {
			return nil, fmt.Errorf("result writer: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(params))
		err = eachField(dec, func(name string) error {
			switch name {
			case "Bucket":
				return dec.Decode(&r.bucket)
			case "Prefix":
				return dec.Decode(&r.prefix)
			case "Results":
				return eachItem(dec, func(res json.RawMessage) error {
					var probe struct{ Error *string }
					return r.Add(res, json.Unmarshal(res, &probe) == nil && probe.Error != nil)
				})
			}
			var skip json.RawMessage
			return dec.Decode(&skip)
		})
		if err != nil {
			r.Discard()
			return nil, fmt.Errorf("result writer: %w", err)
		}
		return r.Finish(ctx)
	}
}

// eachField calls fn with each member name of the JSON object dec is at;
// fn must consume the member's value.
func eachField(dec *json.Decoder, fn func(name string) error) error {
	if t, err := dec.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("parameters: want an object, got %v", t)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		if err := fn(name); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// eachItem calls fn with each element of the JSON array (or null) dec is at.
func eachItem(dec *json.Decoder, fn func(json.RawMessage) error) error {
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("results: want an array, got %v", t)
	}
	for dec.More() {
		var r json.RawMessage
		if err := dec.Decode(&r); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// resultSpool is one result file being written: a JSON array, indented as
// json.MarshalIndent(items, "", "  ") writes it ("null" when empty, as a
// nil slice is), in a temporary file.
type resultSpool struct {
	f   *os.File
	w   *bufio.Writer
	n   int
	buf bytes.Buffer
}

func newResultSpool() (*resultSpool, error) {
	f, err := os.CreateTemp("", "geomigrate-results-*.json")
	if err != nil {
		return nil, err
	}
	return &resultSpool{f: f, w: bufio.NewWriter(f)}, nil
}

func (s *resultSpool) add(r json.RawMessage) error {
	sep := ",\n  "
	if s.n == 0 {
		sep = "[\n  "
	}
	s.n++
	s.buf.Reset()
	if err := json.Indent(&s.buf, r, "  ", "  "); err != nil {
		return err
	}
	if _, err := s.w.WriteString(sep); err != nil {
		return err
	}
	_, err := s.w.Write(s.buf.Bytes())
	return err
}

// finish closes the array and returns the file, rewound, and its size.
func (s *resultSpool) finish() (io.Reader, int64, error) {
	end := "\n]"
	if s.n == 0 {
		end = "null"
	}
	if _, err := s.w.WriteString(end); err != nil {
		return nil, 0, err
	}
	if err := s.w.Flush(); err != nil {
		return nil, 0, err
	}
	size, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	return s.f, size, nil
}

func (s *resultSpool) close() {
	_ = s.f.Close()
	_ = os.Remove(s.f.Name())
}

// startChild runs one child execution of the migrate state machine and
// answers as startExecution.sync:2 does: the DescribeExecution shape on
// success, States.TaskFailed with that shape as Cause on failure.
func (b *Backfill) startChild(migrate *asl.Executor) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			StateMachineArn string
			Input           json.RawMessage
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		if p.StateMachineArn != MigrateStateMachine {
			return nil, &asl.TaskError{Name: "StepFunctions.StateMachineDoesNotExistException", Cause: "no local state machine " + p.StateMachineArn}
		}
		var src migration.Source
		_ = json.Unmarshal(p.Input, &src)
		if key, err := src.DecodedKey(); err == nil {
			// An inventory item's key arrives URL-encoded; the outcome
			// names the object.
			src.Key, src.KeyEncoding = key, "plain"
		}
		start := time.Now()
		o := Outcome{Bucket: src.Bucket, Key: src.Key, Execution: ExecutionName(src.Key), TraceID: tracing.NewID(start)}
		res, err := migrate.Run(tracing.WithID(ctx, o.TraceID), o.Execution, p.Input)
		if err != nil {
			return nil, err
		}
		o.Duration = time.Since(start)
		Summarize(res, &o)
		if o.Status == StatusFailed && b.ended != nil {
			closeEnded(ctx, b.ended, src, res, &o)
		}
		o.History = nil
		if b.onDone != nil {
			b.onDone(o)
		}
		b.mu.Lock()
		outs := b.outcomes
		b.mu.Unlock()
		if outs != nil {
			outs.add(o)
		}
		desc := map[string]any{
			"ExecutionArn": res.ExecutionArn, "Name": res.Name, "StateMachineArn": MigrateStateMachine,
			"Status": res.Status, "StartDate": res.StartTime.UnixMilli(), "StopDate": res.StopTime.UnixMilli(),
			"Input": json.RawMessage(p.Input),
		}
		if res.Status == "SUCCEEDED" {
			desc["Output"] = res.Output
			return json.Marshal(desc)
		}
		desc["Error"], desc["Cause"] = res.Error, res.Cause
		cause, _ := json.Marshal(desc)
		return nil, &asl.TaskError{Name: "States.TaskFailed", Cause: string(cause)}
	}
}
