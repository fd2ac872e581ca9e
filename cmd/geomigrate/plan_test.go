package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/geomigrate/geomigrate/internal/cost"
	"github.com/geomigrate/geomigrate/internal/gdal"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/objectstore/memstore"
	"github.com/geomigrate/geomigrate/internal/plan"
	"github.com/geomigrate/geomigrate/internal/recipe"
	"github.com/geomigrate/geomigrate/internal/sampledata"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
	"github.com/geomigrate/geomigrate/internal/validate"
)

// treeState is every file under dir with its size, mode, modification time
// and SHA-256: what "nothing was written" is checked against.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			line += " " + hex.EncodeToString(h.Sum(nil))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func planJSON(t *testing.T, args ...string) plan.Report {
	t.Helper()
	out, stderr, err := run(t, append([]string{"plan", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("plan %v: %v\n%s", args, err, stderr)
	}
	var r plan.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("plan --json is not JSON: %v\n%s", err, out)
	}
	return r
}

// TestPlanSamples: `geomigrate plan samples-dir` prints the counts and a
// cost per 1,000 files, writes nothing, and --json says the same.
func TestPlanSamples(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(samples, "README.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)
	out, stderr, err := run(t, "plan", samples, "--dest", dest)
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	if after := treeState(t, dir); after != before {
		t.Fatalf("plan wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`Would convert 9 \(.*\), skip 0 \(0 B\), refuse 4 \(.*\); 1 ignored`),
		regexp.MustCompile(`(?m)^\s+\.tif\s+9\s+\S+ KiB\s+5\s+0\s+4\s+0$`),
		regexp.MustCompile(`(?m)^\s+samples\s+14\s`),
		regexp.MustCompile(`samples/vrt_passwd.tif\s+DataError at preflight: UnsafeSource`),
		regexp.MustCompile(`samples/empty.tif\s+DataError at preflight: CorruptSource`),
		regexp.MustCompile(`samples/README.txt\s+not a geospatial format \(.txt\)`),
		regexp.MustCompile(`Cost per 1,000 files: \$\d+\.\d{4} \(Standard\), \$\d+\.\d{4} \(Express\)`),
		regexp.MustCompile(`Step Functions Standard\s+127 transitions \(9 per converted file, 6 per skipped, 10 per refused\)`),
	} {
		if !want.MatchString(out) {
			t.Errorf("plan output lacks %s:\n%s", want, out)
		}
	}

	r := planJSON(t, samples, "--dest", dest)
	if r.Totals.Files != 14 || r.Totals.Convert != 9 || r.Totals.Refuse != 4 || r.Totals.Ignore != 1 || r.ByFormat[".tif"].Refuse != 4 {
		t.Errorf("--json totals %+v, .tif %+v", r.Totals, r.ByFormat[".tif"])
	}
	// 9 converted, 4 refused by preflight and the README (skipped on its
	// name on AWS): 9×9 + 4×10 + 1×6 transitions.
	if e := r.Estimate; e.Files != 14 || e.Transitions != 9*9+4*10+6 || e.PerThousandStandard <= 0 || e.PerThousandExpress <= 0 {
		t.Errorf("--json estimate %+v", e)
	}
	// On AWS the GeoTIFFs and the GeoJSON are read by ranged GETs, though
	// the plan was local: a sample (under 64 MiB) in one GET, in place of
	// the download's, with no HEAD around it.
	if base := int64(9*cost.PerFile[cost.Converted].S3GetHead + 4*cost.PerFile[cost.Remediation].S3GetHead); r.Estimate.S3GetHead != base {
		t.Errorf("S3 GET/HEAD %d, want %d: one ranged GET of each small source in place of its download", r.Estimate.S3GetHead, base)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("plan created the destination %s (%v)", dest, err)
	}
}

// TestPlanAfterMigrate: after a migrate, plan predicts every converted file
// as skipped (already migrated with this recipe) and writes nothing to the
// destination, its state store or its queues; with another recipe, the
// same files would be converted again.
func TestPlanAfterMigrate(t *testing.T) {
	dir := t.TempDir()
	samples, dest := filepath.Join(dir, "samples"), filepath.Join(dir, "out")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	mout, _, _ := run(t, "migrate", samples, "--dest", dest, "--progress", "plain", "--workers", "2")
	report := lastReport(t, mout)
	completed := 0
	for _, f := range report.Files {
		if f.Status == "completed" {
			completed++
		}
	}
	if completed == 0 {
		t.Fatalf("migrate completed nothing:\n%s", mout)
	}
	before := treeState(t, dir)
	r := planJSON(t, samples, "--dest", dest)
	if after := treeState(t, dir); after != before {
		t.Fatalf("plan wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
	skipped := 0
	for _, f := range r.Files {
		if f.Action == plan.ActionSkip && f.Reason == migration.ReasonAlreadyMigrated {
			skipped++
		}
	}
	if skipped != completed {
		t.Errorf("plan skips %d file(s) as already migrated, migrate completed %d:\n%+v", skipped, completed, r.Files)
	}
	other := planJSON(t, samples, "--dest", dest, "--zstd-level", "9")
	if other.Totals.Skip != 0 || other.Totals.Convert < completed || other.RecipeHash == r.RecipeHash {
		t.Errorf("with another recipe: %+v (recipe %s, was %s)", other.Totals, other.RecipeHash, r.RecipeHash)
	}
}

// TestPlanReportsACollision: two sources that would be written to one
// output key are listed as a clash and each as refused at hashcheck
// (DestinationConflict); plan still plans the rest.
func TestPlanReportsACollision(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(d, "dem.tif"))
	}
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(b, "other.tif"))
	out, stderr, err := run(t, "plan", a, b, "--dest", filepath.Join(dir, "out"))
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "1 output key(s) claimed by more than one source") ||
		!strings.Contains(out, filepath.Join(dir, "out", "dem.tif")+" <- a/dem.tif, b/dem.tif") ||
		!strings.Contains(out, "Would convert 1") || !strings.Contains(out, "refuse 2") {
		t.Errorf("plan output:\n%s", out)
	}
}

// TestPlanRejectedByHashCheck: a listed file whose key HashCheck refuses
// (a newline in the name) reaches the plan and is refused at hashcheck
// (internal/plan's TestPlanDecisions checks what it is charged).
func TestPlanRejectedByHashCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, sampleFile(t, "dem_utm33.tif"), filepath.Join(dir, "bad\nname.tif"))
	r := planJSON(t, dir)
	if len(r.Files) != 1 || r.Files[0].Action != plan.ActionRefuse || r.Files[0].Stage != "hashcheck" || r.Files[0].Code != "InvalidKey" {
		t.Fatalf("files %+v", r.Files)
	}
}

func TestPlanFlags(t *testing.T) {
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	prices := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(prices, []byte(`{"stepfunctions_standard_per_1000_transitions": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := planJSON(t, samples)
	dear := planJSON(t, samples, "--prices", prices)
	if want := float64(base.Estimate.Transitions) / 1000; dear.Estimate.Cost.StepFunctionsStandard != want || dear.Model.Prices.StepFunctionsStandardPer1000Transitions != 1 {
		t.Errorf("--prices: Standard $%g, want $%g", dear.Estimate.Cost.StepFunctionsStandard, want)
	}
	small := planJSON(t, samples, "--convert-memory", "885")
	if small.Estimate.ConvertSeconds <= base.Estimate.ConvertSeconds {
		t.Errorf("half a vCPU converts in %g s, a full one in %g s", small.Estimate.ConvertSeconds, base.Estimate.ConvertSeconds)
	}
	for _, bad := range [][]string{
		{"plan"},
		{"plan", samples, "--backend", "gcs"},
		{"plan", samples, "--convert-memory", "64"},
		{"plan", samples, "--architecture", "sparc"},
		{"plan", samples, "--workers", "0"},
		{"plan", samples, "--prices", filepath.Join(dir, "missing.json")},
		{"plan", "s3://bucket/prefix", "--backend", "aws"}, // no --state-table
	} {
		if _, _, err := run(t, bad...); err == nil {
			t.Errorf("geomigrate %v succeeded", bad)
		}
	}
	if _, _, err := run(t, "plan", "s3://bucket/prefix/"); err == nil || !strings.Contains(err.Error(), "need --backend aws") {
		t.Errorf("an s3:// source without --backend aws: %v", err)
	}
}

// TestRequestsPerFile counts the S3 and DynamoDB requests of one file's
// execution along each path through the real handlers, over an object
// store that is not a local directory (as on AWS), and compares them with
// cost.PerFile, which the estimate charges.
func TestRequestsPerFile(t *testing.T) {
	got, ranged := countRequestsPerFile(t)
	for _, p := range cost.Paths {
		if got[p] != cost.PerFile[p] {
			t.Errorf("%s: the handlers made %+v, cost.PerFile says %+v", p, got[p], cost.PerFile[p])
		}
	}
	// Read by range, the download's GET becomes the ranged GETs
	// (cost.Calculate adds those beyond one); the rest is the same: no
	// HEAD of the source before or after, the reads are pinned to its
	// ETag. HashCheck's hash is a ranged read on both paths.
	want := cost.PerFile[cost.Converted]
	want.S3GetHead += ranged.ranges - ranged.downloadRanges
	if ranged.req != want || ranged.ranges == 0 {
		t.Errorf("converted by range: the handlers made %+v (%d ranged GETs, %d when downloading), cost.Calculate charges %+v", ranged.req, ranged.ranges, ranged.downloadRanges, want)
	}
	if c := cost.PerFile[cost.Converted]; c.S3GetHead+c.S3PutCopyList+c.S3Delete > 10 {
		t.Errorf("a converted file makes %d S3 requests, want at most 10", c.S3GetHead+c.S3PutCopyList+c.S3Delete)
	}
}

// rangedCount is one converted file's requests when Convert reads by
// range, with the ranged reads (GETs with a Range or If-Match) of both
// ways of reading.
type rangedCount struct {
	req                    cost.Requests
	ranges, downloadRanges int
}

// countingStore counts object store calls by S3 request class.
type countingStore struct {
	objectstore.Store
	dyn    *countingDynamo // read and reset between runs
	mu     sync.Mutex
	req    cost.Requests
	ranges int // the OpenRange calls among S3GetHead
}

func (s *countingStore) count(fn func(r *cost.Requests)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.req)
}

func (s *countingStore) Head(ctx context.Context, b, k string) (objectstore.Object, error) {
	s.count(func(r *cost.Requests) { r.S3GetHead++ })
	return s.Store.Head(ctx, b, k)
}

func (s *countingStore) Open(ctx context.Context, b, k string) (io.ReadCloser, error) {
	s.count(func(r *cost.Requests) { r.S3GetHead++ })
	return s.Store.Open(ctx, b, k)
}

func (s *countingStore) OpenRange(ctx context.Context, b, k string, off, n int64) (io.ReadCloser, error) {
	s.count(func(r *cost.Requests) { r.S3GetHead++; s.ranges++ })
	return s.Store.OpenRange(ctx, b, k, off, n)
}

func (s *countingStore) OpenRangeIfMatch(ctx context.Context, b, k, etag string, off, n int64) (io.ReadCloser, error) {
	s.count(func(r *cost.Requests) { r.S3GetHead++; s.ranges++ })
	return s.Store.OpenRangeIfMatch(ctx, b, k, etag, off, n)
}

func (s *countingStore) Put(ctx context.Context, req objectstore.PutRequest) (objectstore.Object, error) {
	s.count(func(r *cost.Requests) { r.S3PutCopyList++ }) // one PutObject: outputs here are below the multipart threshold
	return s.Store.Put(ctx, req)
}

func (s *countingStore) Copy(ctx context.Context, req objectstore.CopyRequest) (objectstore.Object, error) {
	s.count(func(r *cost.Requests) {
		r.S3PutCopyList++
		if req.SrcETag == "" {
			r.S3GetHead++ // s3store HEADs a source it is not told about
		}
	})
	return s.Store.Copy(ctx, req)
}

func (s *countingStore) Delete(ctx context.Context, b, k string) error {
	s.count(func(r *cost.Requests) { r.S3Delete++ })
	return s.Store.Delete(ctx, b, k)
}

func (s *countingStore) List(ctx context.Context, b, prefix string, fn func(objectstore.Object) error) error {
	s.count(func(r *cost.Requests) { r.S3PutCopyList++ }) // one ListObjectsV2 page: a few keys
	return s.Store.List(ctx, b, prefix, fn)
}

// countingState counts DynamoDB request units of the state store calls, at
// the item's size as dynamostore encodes it: a strongly consistent GetItem
// is one read unit per 4 KB (at least one, found or not), a PutItem one
// write unit per 1 KB.
type countingState struct {
	statestore.Backend
	store *countingStore
}

func (c countingState) Get(ctx context.Context, id string) (statestore.Job, error) {
	j, err := c.Backend.Get(ctx, id)
	units := 1
	if err == nil {
		units = max(1, (itemBytes(j)+4095)/4096)
	}
	c.store.count(func(r *cost.Requests) { r.DynamoDBRead += units })
	return j, err
}

func (c countingState) Put(ctx context.Context, j statestore.Job, expect int64) error {
	j.Version = expect + 1
	units := max(1, (itemBytes(j)+1023)/1024)
	c.store.count(func(r *cost.Requests) { r.DynamoDBWrite += units })
	return c.Backend.Put(ctx, j, expect)
}

// itemBytes is DynamoDB's size of the item dynamostore writes for j: the
// lengths of attribute names and values.
func itemBytes(j statestore.Job) int {
	item, err := dynamostore.Encode(j)
	if err != nil {
		panic(err)
	}
	return itemSize(item)
}

func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + attrBytes(v)
	}
	return n
}

// dynamoWrites are the writes DynamoDB charges for: PutItem calls, their
// table write units, and the status index's writes and units.
type dynamoWrites struct {
	PutItems, TableUnits, IndexWrites, IndexUnits int
	ByStatus                                      map[string]int // index units by the status of the entry written or deleted
}

// countingDynamo is a DynamoDB table in memory for dynamostore: GetItem,
// and PutItem with its version condition; Query and Scan find nothing (no
// handler lists jobs on these paths). Each PutItem is charged as DynamoDB
// charges it (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes):
// one write unit per KB of the item on the table, and on the status index
// (projection ALL: an entry is the item) one write when an item enters it,
// two (the old entry deleted, the new one put) when its index key,
// status_shard or the sort key updated_at, changes, one when only
// projected attributes change, one when it leaves; each write one unit
// per KB of the entry it writes or deletes.
type countingDynamo struct {
	items map[string]map[string]types.AttributeValue
	w     dynamoWrites
	mu    sync.Mutex
}

func kb(item map[string]types.AttributeValue) int { return max(1, (itemSize(item)+1023)/1024) }

func (d *countingDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pk := in.Key[dynamostore.AttrPK].(*types.AttributeValueMemberS).Value
	return &dynamodb.GetItemOutput{Item: d.items[pk]}, nil
}

func (d *countingDynamo) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	pk := in.Item[dynamostore.AttrPK].(*types.AttributeValueMemberS).Value
	old, exists := d.items[pk]
	if expect, ok := in.ExpressionAttributeValues[":expect"]; ok {
		if v, _ := old[dynamostore.AttrVersion].(*types.AttributeValueMemberN); !exists || v == nil || v.Value != expect.(*types.AttributeValueMemberN).Value {
			return nil, &types.ConditionalCheckFailedException{}
		}
	} else if exists {
		return nil, &types.ConditionalCheckFailedException{}
	}
	d.items[pk] = in.Item
	d.w.PutItems++
	d.w.TableUnits += kb(in.Item)
	key := func(item map[string]types.AttributeValue) (string, bool) {
		shard, ok := item[dynamostore.AttrStatusShard].(*types.AttributeValueMemberS)
		updated, _ := item[dynamostore.AttrUpdatedAt].(*types.AttributeValueMemberS)
		if !ok || updated == nil {
			return "", false // a GSI holds only items with both key attributes
		}
		return shard.Value + "|" + updated.Value, true
	}
	was, in1 := key(old)
	now, in2 := key(in.Item)
	charge := func(item map[string]types.AttributeValue) {
		if d.w.ByStatus == nil {
			d.w.ByStatus = map[string]int{}
		}
		d.w.IndexWrites++
		d.w.IndexUnits += kb(item)
		d.w.ByStatus[item[dynamostore.AttrStatus].(*types.AttributeValueMemberS).Value] += kb(item)
	}
	switch {
	case in1 && in2 && was != now:
		charge(old)
		charge(in.Item)
	case in2:
		charge(in.Item)
	case in1:
		charge(old)
	}
	return &dynamodb.PutItemOutput{}, nil
}

func (d *countingDynamo) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}

func (d *countingDynamo) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return &dynamodb.ScanOutput{}, nil
}

func attrBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + attrBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + attrBytes(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	}
	panic(fmt.Sprintf("attribute type %T not sized", v))
}

// downloadEngine hides the engine's ranged reads: Convert downloads the
// source, the path PerFile counts (ranged GETs are added by size).
type downloadEngine struct{ recipe.Engine }

// countRequestsPerFile runs one file along each path through the local
// executor with the real handlers and GDAL, and counts.
func countRequestsPerFile(t *testing.T) (map[cost.Path]cost.Requests, rangedCount) {
	t.Helper()
	ctx := context.Background()
	engine, err := gdal.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := sampledata.Write(dir); err != nil {
		t.Fatal(err)
	}
	mem := memstore.New("src", "dest")
	// The copies of landcover are files of the same dataset within the
	// extent its STAC collection already has (in space and, their items
	// being dated by Last-Modified, in time: written in this order, after
	// landcover_old.tif and before landcover_4326.tif, both converted
	// first): the steady state cost.PerFile charges. The first file of a
	// dataset, or one widening its extent, also rewrites the collection.
	for _, f := range []struct{ key, name string }{
		{"landcover_old.tif", "landcover_4326.tif"}, {"landcover_copy.tif", "landcover_4326.tif"},
		{"landcover_ranged.tif", "landcover_4326.tif"}, {"landcover_4326.tif", "landcover_4326.tif"},
		{"not_a_raster.tif", "not_a_raster.tif"},
	} {
		key, name := f.key, f.name
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mem.Put(ctx, objectstore.PutRequest{Bucket: "src", Key: key, Body: bytes.NewReader(b), Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
	}
	store := &countingStore{Store: mem}
	// The job records are dynamostore's items, on a DynamoDB stand-in that
	// counts the table's and the status index's writes as DynamoDB
	// charges them.
	dyn := &countingDynamo{items: map[string]map[string]types.AttributeValue{}}
	store.dyn = dyn
	tracker := statestore.NewTracker(countingState{Backend: dynamostore.New(dyn, dynamostore.Options{Table: "jobs"}), store: store})
	cfg := migration.Config{DestBucket: "dest", WorkDir: t.TempDir(), Recipe: recipe.Recipe{EngineVersion: engine.Version(), ToolVersion: "test"}}
	quiet := slog.New(slog.DiscardHandler)
	h := localrun.Handlers{
		HashCheck: migration.NewHashCheck(cfg, store, tracker, migration.StoreFingerprinter{Store: store}, quiet),
		Convert:   migration.NewConvert(cfg, store, tracker, downloadEngine{engine}, validate.Output, quiet),
		Promote:   migration.NewPromote(cfg, store, tracker, quiet),
		Classify:  migration.NewClassify(tracker, nil, quiet).WithStagingCleanup(store, cfg),
	}
	sink := func(context.Context, string) (string, error) { return "m", nil }
	queues := localrun.Queues{Remediation: queueFunc(sink), DeadLetter: queueFunc(sink)}
	exec, err := localrun.NewExecutor(h, queues)
	if err != nil {
		t.Fatal(err)
	}
	h.Convert = migration.NewConvert(cfg, store, tracker, engine, validate.Output, quiet)
	execRanged, err := localrun.NewExecutor(h, queues)
	if err != nil {
		t.Fatal(err)
	}
	got := map[cost.Path]cost.Requests{}
	var downloadRanges int
	for _, step := range []struct {
		path   cost.Path
		key    string
		status string
	}{
		{"first of its dataset", "landcover_4326.tif", "SUCCEEDED"},
		{"widening its extent", "landcover_old.tif", "SUCCEEDED"},
		{cost.Converted, "landcover_copy.tif", "SUCCEEDED"},
		{cost.Skipped, "landcover_4326.tif", "SUCCEEDED"},
		{cost.Remediation, "not_a_raster.tif", "FAILED"},
		{cost.Rejected, "gone.tif", "FAILED"}, // listed, then deleted: HashCheck's HEAD finds nothing
	} {
		store.count(func(r *cost.Requests) { *r, store.ranges, dyn.w = cost.Requests{}, 0, dynamoWrites{} })
		res, err := exec.Run(ctx, "count-"+string(step.path), json.RawMessage(fmt.Sprintf(`{"bucket":"src","key":%q}`, step.key)))
		if err != nil || res.Status != step.status {
			t.Fatalf("%s: %v %s %s %s", step.path, err, res.Status, res.Error, res.Cause)
		}
		store.count(func(r *cost.Requests) {
			w := dyn.w
			if w.TableUnits != r.DynamoDBWrite {
				t.Errorf("%s: DynamoDB charged %d table write units for %d PutItems, the tracker's writes sized %d", step.path, w.TableUnits, w.PutItems, r.DynamoDBWrite)
			}
			r.DynamoDBIndexWrite = w.IndexUnits
			got[step.path] = *r
			if step.path == cost.Converted {
				downloadRanges = store.ranges
			}
			t.Logf("%s: %+v; DynamoDB: %d PutItems (no other write call exists in dynamostore.API), %d index writes, units by status %v", step.path, *r, w.PutItems, w.IndexWrites, w.ByStatus)
		})
	}
	store.count(func(r *cost.Requests) { *r, store.ranges, dyn.w = cost.Requests{}, 0, dynamoWrites{} })
	res, err := execRanged.Run(ctx, "count-ranged", json.RawMessage(`{"bucket":"src","key":"landcover_ranged.tif"}`))
	if err != nil || res.Status != "SUCCEEDED" {
		t.Fatalf("ranged: %v %s %s %s", err, res.Status, res.Error, res.Cause)
	}
	var ranged rangedCount
	store.count(func(r *cost.Requests) {
		r.DynamoDBIndexWrite = dyn.w.IndexUnits
		ranged = rangedCount{req: *r, ranges: store.ranges, downloadRanges: downloadRanges}
	})
	t.Logf("converted by range: %+v, %d ranged GETs", ranged.req, ranged.ranges)
	return got, ranged
}

// queueFunc is a queue sender from a function.
type queueFunc func(ctx context.Context, body string) (string, error)

func (f queueFunc) Send(ctx context.Context, body string) (string, error) { return f(ctx, body) }

// TestPlanQuotas: plan prints the duration with the quota that binds it,
// and --max-concurrency, --concurrency, --quota-region and --quotas are
// applied: each quota, made tight, binds in turn.
func TestPlanQuotas(t *testing.T) {
	dir := t.TempDir()
	samples := filepath.Join(dir, "samples")
	if _, _, err := run(t, "sample-data", samples); err != nil {
		t.Fatal(err)
	}
	quotas := func(doc string) []string {
		f := filepath.Join(t.TempDir(), "quotas.json")
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"--quotas", f}
	}
	tests := []struct {
		name  string
		args  []string
		binds string
	}{
		{"defaults", nil, cost.BoundLongestExecution},
		{"max concurrency", []string{"--max-concurrency", "1"}, "backfill MaxConcurrency"},
		{"Lambda concurrency", []string{"--concurrency", "1"}, "Lambda concurrency"},
		{"StartExecution", quotas(`{"start_execution_bucket": 0, "start_execution_refill_per_s": 0.01}`), "Step Functions StartExecution"},
		{"state transitions", quotas(`{"state_transition_bucket": 0, "state_transition_refill_per_s": 0.01}`), "Step Functions state transitions"},
		{"S3 writes", quotas(`{"s3_put_copy_post_delete_per_prefix_per_s": 0.01}`), "S3 PUT/COPY/POST/DELETE per prefix"},
		{"S3 reads", quotas(`{"s3_get_head_per_prefix_per_s": 0.01}`), "S3 GET/HEAD per prefix"},
		{"DynamoDB table writes", quotas(`{"dynamodb_table_wcu_per_s": 0.01}`), "DynamoDB table write units"},
		{"DynamoDB table reads", quotas(`{"dynamodb_table_rcu_per_s": 0.01}`), "DynamoDB table read units"},
		{"DynamoDB index partition", quotas(`{"dynamodb_partition_wcu_per_s": 0.01}`), "DynamoDB index partition writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := planJSON(t, append([]string{samples}, tt.args...)...)
			b := r.Estimate.Bounds
			if len(b) == 0 || b[0].Name != tt.binds || r.Estimate.WallClockSeconds != b[0].Seconds {
				t.Fatalf("bounds %+v, want %q first", b, tt.binds)
			}
			out, stderr, err := run(t, append([]string{"plan", samples}, tt.args...)...)
			if err != nil {
				t.Fatalf("plan: %v\n%s", err, stderr)
			}
			if want := ", bound by " + tt.binds + " (raise: " + b[0].Raise + ")"; !strings.Contains(out, want) {
				t.Errorf("plan output lacks %q:\n%s", want, out)
			}
		})
	}
	if r := planJSON(t, samples, "--quota-region", "other"); r.Model.Quotas.TransitionRefill != cost.QuotaPresets()["other"].TransitionRefill || r.Model.Quotas.Region != "other" {
		t.Errorf("--quota-region other: quotas %+v", r.Model.Quotas)
	}
	// A file applies over the region's preset.
	if r := planJSON(t, append([]string{samples, "--quota-region", "other"}, quotas(`{"s3_prefixes": 8}`)...)...); r.Model.Quotas.S3Prefixes != 8 || r.Model.Quotas.Region != "other" {
		t.Errorf("--quotas over --quota-region: %+v", r.Model.Quotas)
	}
	if r := planJSON(t, samples, "--max-concurrency", "7"); r.Model.Settings.MaxConcurrency != 7 {
		t.Errorf("--max-concurrency 7: settings %+v", r.Model.Settings)
	}
	for _, bad := range [][]string{
		{"plan", samples, "--quota-region", "mars"},
		{"plan", samples, "--max-concurrency", "0"},
		{"plan", samples, "--quotas", filepath.Join(dir, "missing.json")},
		append([]string{"plan", samples}, quotas(`{"s3_prefixes": 0}`)...),
		append([]string{"plan", samples}, quotas(`{"no_such_quota": 1}`)...),
	} {
		if _, _, err := run(t, bad...); err == nil {
			t.Errorf("geomigrate %v succeeded", bad)
		}
	}
}
