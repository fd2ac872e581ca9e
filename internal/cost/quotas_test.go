package cost

import (
	"math"
	"strings"
	"testing"
)

// TestBounds: each quota binds in turn when it is the tight one, and the
// duration is the binding bound's.
func TestBounds(t *testing.T) {
	t.Parallel()
	groups := []Group{{Format: ".tif", Path: Converted, Files: 100_000, Bytes: 100_000 * 10_000_000}}
	tests := []struct {
		binds     string
		adjust    func(*Model)
		container bool
	}{
		{"backfill MaxConcurrency", func(m *Model) { m.Settings.MaxConcurrency = 10 }, false},
		{"Lambda concurrency", func(m *Model) { m.Settings.Concurrency, m.Settings.MaxConcurrency = 10, 1000 }, false},
		{"Step Functions StartExecution", func(m *Model) { m.Quotas.StartExecutionRefill = 1 }, false},
		{"Step Functions state transitions", func(m *Model) { m.Quotas.TransitionRefill = 1 }, false},
		{"S3 PUT/COPY/POST/DELETE per prefix", func(m *Model) { m.Quotas.S3Prefixes, m.Quotas.S3PutPerPrefix = 1, 1 }, false},
		{"S3 GET/HEAD per prefix", func(m *Model) { m.Quotas.S3Prefixes, m.Quotas.S3GetPerPrefix = 1, 1 }, false},
		{"DynamoDB table write units", func(m *Model) { m.Quotas.DynamoDBTableWCU = 1 }, false},
		{"DynamoDB table read units", func(m *Model) { m.Quotas.DynamoDBTableRCU = 1 }, false},
		{"DynamoDB index partition writes", func(m *Model) {
			m.PerFile = map[Path]Requests{Converted: {DynamoDBIndexWrite: 7}}
			m.Quotas.IndexPartitions, m.Quotas.DynamoDBPartitionWCU = 1, 1
		}, false},
		{"Lambda scaling rate", func(m *Model) {
			m.Settings.Concurrency, m.Settings.MaxConcurrency, m.Quotas.LambdaScalePer10s = 1e5, 1e5, 10
		}, false},
		{"Fargate task launches", func(m *Model) { m.Quotas.FargateLaunchBurst, m.Quotas.FargateLaunchPerSec = 0, 1 }, true},
		{BoundLongestExecution, func(m *Model) {
			m.Settings.Concurrency, m.Settings.MaxConcurrency, m.Quotas.LambdaScalePer10s = 1e6, 1e6, 1e7
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.binds, func(t *testing.T) {
			m := testModel(t)
			tt.adjust(&m)
			gs := groups
			if tt.container {
				gs = []Group{groups[0]}
				gs[0].Container = true
			}
			e, err := Calculate(m, gs)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Bounds[0].Name; got != tt.binds {
				t.Fatalf("binding = %q (%.1f s), want %q; bounds %+v", got, e.Bounds[0].Seconds, tt.binds, e.Bounds)
			}
			if e.WallClockSeconds != e.Bounds[0].Seconds || e.Bounds[0].Raise == "" {
				t.Fatalf("wall clock %v, binding bound %+v", e.WallClockSeconds, e.Bounds[0])
			}
		})
	}
}

// TestBucketSeconds: the burst passes free, the rest at the refill rate.
func TestBucketSeconds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ n, bucket, refill, want float64 }{
		{1000, 1300, 300, 0}, {1_001_300, 1300, 300, 3333.333333}, {11_000_000, 5000, 1500, 7330},
	} {
		if got := bucketSeconds(tt.n, tt.bucket, tt.refill); math.Abs(got-tt.want) > 1e-3 {
			t.Errorf("bucketSeconds(%v, %v, %v) = %v, want %v", tt.n, tt.bucket, tt.refill, got, tt.want)
		}
	}
}

// TestOverrideQuotas: fields of the file replace the base's, unknown and
// zero ones are refused, and the other Regions' preset is smaller.
func TestOverrideQuotas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc, err string
		check    func(Quotas) bool
	}{
		{doc: `{"state_transition_refill_per_s": 5000, "s3_prefixes": 4}`, check: func(q Quotas) bool {
			return q.TransitionRefill == 5000 && q.S3Prefixes == 4 && q.StartExecutionRefill == 300
		}},
		{doc: `{"start_execution_refill_per_s": 0}`, err: "start_execution_refill_per_s"},
		{doc: `{"no_such_quota": 1}`, err: "unknown field"},
	}
	for _, tt := range tests {
		q, err := OverrideQuotas(strings.NewReader(tt.doc), DefaultQuotas())
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err %v, want %q", tt.doc, err, tt.err)
		case tt.err == "" && (err != nil || !tt.check(q)):
			t.Errorf("%s: %+v, %v", tt.doc, q, err)
		}
	}
	if o := QuotaPresets()["other"]; o.TransitionRefill >= DefaultQuotas().TransitionRefill || o.StartExecutionRefill >= DefaultQuotas().StartExecutionRefill {
		t.Errorf("other Regions' preset %+v not below the large Regions'", o)
	}
}

// TestCostTerms: Convert's download and upload, Promote's copy, index
// writes, quarantine and logs are charged with the default settings.
func TestCostTerms(t *testing.T) {
	t.Parallel()
	groups := []Group{
		{Format: ".tif", Path: Converted, Files: 10, Bytes: 10 * 80_000_000},
		{Format: ".tif", Path: Remediation, Files: 2, Bytes: 2 * 10_000_000},
		{Format: ".gpkg", Path: Remediation, Files: 1, Bytes: 100_000_000}, // over the copy limit: referenced
	}
	base := testModel(t)
	full := base
	full.Settings = DefaultSettings()
	full.Settings.MaxConcurrency = full.Settings.Concurrency
	full.PerFile = map[Path]Requests{}
	for p, r := range base.PerFile {
		r.DynamoDBIndexWrite = PerFile[p].DynamoDBIndexWrite
		full.PerFile[p] = r
	}
	b, err := Calculate(base, groups)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Calculate(full, groups)
	if err != nil {
		t.Fatal(err)
	}
	// 80 MB at 80 MB/s down, 40 MB up, 40 MB copied by Promote: +2 s per file.
	if d := e.LambdaSeconds - b.LambdaSeconds; math.Abs(d-20) > 1e-6 {
		t.Errorf("I/O adds %v Lambda-seconds, want 20", d)
	}
	if e.IndexWrites != 10*7+3*6 || e.DynamoDBWriteUnits-b.DynamoDBWriteUnits != e.IndexWrites {
		t.Errorf("index writes %d, write units %d vs %d", e.IndexWrites, e.DynamoDBWriteUnits, b.DynamoDBWriteUnits)
	}
	if e.QuarantineBytes != 20_000_000 || math.Abs(e.Cost.Quarantine-0.00046) > 1e-12 {
		t.Errorf("quarantine %d B, $%v", e.QuarantineBytes, e.Cost.Quarantine)
	}
	if want := (10*8 + 3*9) * int64(2000); e.LogBytes != want || e.Cost.Logs <= 0 {
		t.Errorf("log bytes %d, want %d ($%v)", e.LogBytes, want, e.Cost.Logs)
	}
}
