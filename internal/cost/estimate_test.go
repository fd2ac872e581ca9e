package cost

import (
	"math"
	"strings"
	"testing"
)

// testModel has round rates and a fixed request table, so the expected
// values below can be worked out by hand; prices are the embedded ones.
func testModel(t *testing.T) Model {
	t.Helper()
	return Model{
		Prices: DefaultPrices(),
		Throughput: Throughput{Formats: map[string]Rate{
			".tif":  {MBPerSecond: 10, OverheadMS: 100, OutputRatio: 0.5, RangeGetsPerFile: 10, RangeGetsPerMB: 4},
			".gpkg": {MBPerSecond: 5, OverheadMS: 200, OutputRatio: 0.25},
		}},
		Walks: map[Path]Walk{
			Converted:   {Transitions: 8, Lambdas: []string{"HashCheck", "Convert", "Promote"}},
			Skipped:     {Transitions: 6, Lambdas: []string{"HashCheck"}},
			Remediation: {Transitions: 9, Lambdas: []string{"HashCheck", "Convert", "Classify"}, SQSSends: 1},
			Rejected:    {Transitions: 7, Lambdas: []string{"HashCheck", "Classify"}, SQSSends: 1},
		},
		PerFile: map[Path]Requests{
			Converted:   {S3GetHead: 5, S3PutCopyList: 3, S3Delete: 1, DynamoDBRead: 2, DynamoDBWrite: 4},
			Skipped:     {S3GetHead: 3, S3PutCopyList: 1, DynamoDBRead: 1},
			Remediation: {S3GetHead: 3, S3PutCopyList: 2, DynamoDBRead: 2, DynamoDBWrite: 3},
			Rejected:    {S3GetHead: 1, DynamoDBRead: 1, DynamoDBWrite: 1},
		},
		Settings: testSettings(),
		Quotas:   unboundQuotas(),
	}
}

// testSettings are the defaults without the terms the hand-worked figures
// below predate (I/O time, index writes, logs): TestCostTerms checks those.
func testSettings() Settings {
	s := DefaultSettings()
	s.IOMBPerSecond, s.LogBytesPerTransition = math.Inf(1), 0
	s.MaxConcurrency = s.Concurrency
	return s
}

// unboundQuotas leave Lambda concurrency and the longest execution as the
// only bounds that matter (TestBounds tries each quota).
func unboundQuotas() Quotas {
	q := DefaultQuotas()
	q.StartExecutionRefill, q.TransitionRefill, q.S3Prefixes, q.IndexPartitions = 1e12, 1e12, 1e9, 1e9
	q.DynamoDBTableWCU, q.DynamoDBTableRCU = 1e12, 1e12
	return q
}

func TestCalculate(t *testing.T) {
	t.Parallel()
	type want struct {
		transitions, invocations, getHead, putList, readUnits, writeUnits, sqs, overExpress int64
		gbSeconds, expressGBs, wall                                                         float64
		standard, express, lambda, perThousandStandard, perThousandExpress                  float64
		standIns                                                                            string
	}
	tests := []struct {
		name   string
		groups []Group
		adjust func(*Settings)
		want   want
	}{
		{
			// Per file (10 MB, 1 vCPU at 10,240 MB): HashCheck 0.1 + 10/80 =
			// 0.225 s at 0.5 GB, Convert 0.1 + 10/10 = 1.1 s at 10 GB, Promote
			// 0.1 s at 0.5 GB → 1.425 s, 11.1625 GB-s. × 1,000:
			// Lambda 3,000 × 0.2e-6 + 11,162.5 × 0.0000133334 = 0.1494340775;
			// Standard 8,000 × 0.025e-3 = 0.2; Express 1,000 × 1e-6 +
			// 15 × 0.1 s × 0.0625 GB × 1,000 × 0.00001667 = 0.0025628125;
			// S3 5,000 × 0.4e-6 + 3,000 × 5e-6 = 0.017; DynamoDB 2,000 ×
			// 0.125e-6 + 4,000 × 0.625e-6 = 0.00275. Output 5 MB: one PUT.
			name:   "1,000 GeoTIFFs of 10 MB converted",
			groups: []Group{{Format: ".tif", Path: Converted, Files: 1000, Bytes: 10_000_000_000}},
			want: want{transitions: 8000, invocations: 3000, getHead: 5000, putList: 3000, readUnits: 2000, writeUnits: 4000,
				gbSeconds: 11162.5, expressGBs: 93.75, wall: 1.425,
				standard: 0.3691840775, express: 0.17174689, lambda: 0.1494340775, perThousandStandard: 0.3691840775, perThousandExpress: 0.17174689},
		},
		{
			// 100 MiB read by range (the download's GET becomes the ranged
			// GETs, pinned to the source's ETag with no HEAD around them:
			// 13 in its place, +12 per file); output
			// 50 MiB > 16 MiB parts: 4 parts + create + complete instead of
			// one PUT (+5).
			name:   "range reads and multipart output",
			groups: []Group{{Format: ".tif", Path: Converted, Files: 10, Bytes: 10 * 104857600, RangeRead: true}},
			// 100 MiB, above the 64 MiB read whole: 13 GETs of 8 MiB blocks.
			want: want{transitions: 80, invocations: 30, getHead: 170, putList: 80, readUnits: 20, writeUnits: 40,
				gbSeconds: 1066.1296, expressGBs: 7.5625, wall: 12.09648,
				standard: 0.0167166324086, express: 0.0148526992836, lambda: 0.01422113240864, perThousandStandard: 1.67166324086, perThousandExpress: 1.48526992836},
		},
		{
			// .kml read by range, estimated as .gpkg: 1 MiB is read whole,
			// one GET in place of the download's.
			name:   "range reads of a format not measured",
			groups: []Group{{Format: ".kml", Path: Converted, Files: 1, Bytes: 1 << 20, RangeRead: true}},
			want: want{transitions: 8, invocations: 3, getHead: 5, putList: 3, readUnits: 2, writeUnits: 4,
				gbSeconds: 4.2037056, expressGBs: 0.04375, wall: 0.6228224,
				standard: 0.000276399688247, express: 0.000078129000747, lambda: 0.000056649688247040006, perThousandStandard: 0.276399688247, perThousandExpress: 0.078129000747,
				standIns: ".kml as .gpkg"},
		},
		{
			// Skipped GeoPackages are hashed (2 MB at 80 MB/s); .txt files
			// are skipped on their name (no read, no request); .jp2 is
			// estimated as .tif, .kml as .gpkg; refused files pay Convert's
			// overhead only, Classify, and one SQS message; their 80 MB are
			// quarantined a month at $0.023/GB: +$0.00184.
			name: "skipped, ignored, refused, stand-ins",
			groups: []Group{
				{Format: ".gpkg", Path: Skipped, Files: 100, Bytes: 100 * 2_000_000},
				{Format: ".txt", Path: Skipped, Files: 50, Bytes: 50 * 1000, NameOnly: true},
				{Format: ".jp2", Path: Remediation, Files: 20, Bytes: 20 * 4_000_000},
				{Format: ".kml", Path: Converted, Files: 30, Bytes: 30 * 1_000_000},
			},
			want: want{transitions: 1320, invocations: 300, getHead: 510, putList: 230, readUnits: 200, writeUnits: 180, sqs: 20,
				gbSeconds: 154.4375, expressGBs: 3.375, wall: 0.6125,
				standard: 0.0384586769625, express: 0.0057149382125, lambda: 0.0021191769625, perThousandStandard: 0.1922933848125, perThousandExpress: 0.0285746910625,
				standIns: ".jp2 as .tif, .kml as .gpkg"},
		},
		{
			// Rejected by HashCheck before reading: HashCheck and Classify
			// 0.1 s each at 0.5 GB = 0.1 GB-s; 7 transitions, one message.
			name:   "rejected by HashCheck",
			groups: []Group{{Format: ".tif", Path: Rejected, Files: 5, Bytes: 5 * 1_000_000}},
			want: want{transitions: 35, invocations: 10, getHead: 5, readUnits: 5, writeUnits: 5, sqs: 5,
				gbSeconds: 0.5, expressGBs: 0.0625, wall: 0.2,
				standard: 0.0008914167, express: 0.000022458575, lambda: 0.0000086667, perThousandStandard: 0.17828334, perThousandExpress: 0.004491715},
		},
		{
			// 500 MB with 1,000 MB per vCPU: half speed, Convert (0.1 + 4) / 0.5
			// = 8.2 s; x86 price; concurrency 2: 35.6 s of Lambda / 2 = 17.8 s.
			name:   "half a vCPU on x86 at concurrency 2",
			groups: []Group{{Format: ".tif", Path: Converted, Files: 4, Bytes: 4 * 40_000_000}},
			adjust: func(s *Settings) {
				s.ConvertMemoryMB, s.MemoryPerVCPUMB, s.Architecture, s.Concurrency = 500, 1000, "x86_64", 2
			},
			want: want{transitions: 32, invocations: 12, getHead: 20, putList: 24, readUnits: 8, writeUnits: 16,
				gbSeconds: 17.415625, expressGBs: 2.225, wall: 17.8,
				standard: 0.0012316609971875, express: 0.0004727517471875, lambda: 0.0002926609971875, perThousandStandard: 0.30791524929687497, perThousandExpress: 0.118187936796875},
		},
		{
			// 4 GB: HashCheck 50.1 s + Convert 400.1 s + Promote 0.1 s =
			// 450.3 s, over Express's 300 s.
			name:   "files too long for Express",
			groups: []Group{{Format: ".tif", Path: Converted, Files: 2, Bytes: 2 * 4_000_000_000}},
			want: want{transitions: 16, invocations: 6, getHead: 10, putList: 248, readUnits: 4, writeUnits: 8, overExpress: 2,
				gbSeconds: 8052.2, expressGBs: 56.2875, wall: 450.3,
				standard: 0.10901390348, express: 0.109554216105, lambda: 0.10736440348, perThousandStandard: 54.50695174, perThousandExpress: 54.7771080525},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testModel(t)
			if tt.adjust != nil {
				tt.adjust(&m.Settings)
			}
			e, err := Calculate(m, tt.groups)
			if err != nil {
				t.Fatal(err)
			}
			ints := []struct {
				name      string
				got, want int64
			}{
				{"transitions", e.Transitions, tt.want.transitions},
				{"lambda invocations", e.LambdaInvocations, tt.want.invocations},
				{"S3 GET/HEAD", e.S3GetHead, tt.want.getHead},
				{"S3 PUT/COPY/LIST", e.S3PutCopyList, tt.want.putList},
				{"DynamoDB read units", e.DynamoDBReadUnits, tt.want.readUnits},
				{"DynamoDB write units", e.DynamoDBWriteUnits, tt.want.writeUnits},
				{"SQS requests", e.SQSRequests, tt.want.sqs},
				{"over the Express limit", e.OverExpressLimit, tt.want.overExpress},
			}
			for _, c := range ints {
				if c.got != c.want {
					t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
				}
			}
			floats := []struct {
				name      string
				got, want float64
			}{
				{"Lambda GB-s", e.LambdaGBSeconds, tt.want.gbSeconds},
				{"Express GB-s", e.ExpressGBSeconds, tt.want.expressGBs},
				{"wall clock", e.WallClockSeconds, tt.want.wall},
				{"total (Standard)", e.Cost.TotalStandard, tt.want.standard},
				{"total (Express)", e.Cost.TotalExpress, tt.want.express},
				{"Lambda", e.Cost.Lambda, tt.want.lambda},
				{"per 1,000 (Standard)", e.PerThousandStandard, tt.want.perThousandStandard},
				{"per 1,000 (Express)", e.PerThousandExpress, tt.want.perThousandExpress},
			}
			for _, c := range floats {
				if math.Abs(c.got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
					t.Errorf("%s = %.12g, want %.12g", c.name, c.got, c.want)
				}
			}
			if got := strings.Join(e.StandInList(), ", "); got != tt.want.standIns {
				t.Errorf("stand-ins %q, want %q", got, tt.want.standIns)
			}
		})
	}
}

func TestCalculateRefusesBadSettings(t *testing.T) {
	t.Parallel()
	for _, adjust := range []func(*Settings){
		func(s *Settings) { s.Architecture = "sparc" },
		func(s *Settings) { s.ConvertMemoryMB = 64 },
		func(s *Settings) { s.SmallMemoryMB = 20000 },
		func(s *Settings) { s.Concurrency = 0 },
		func(s *Settings) { s.HashReadMBPerSecond = 0 },
	} {
		m := testModel(t)
		adjust(&m.Settings)
		if _, err := Calculate(m, []Group{{Format: ".tif", Path: Converted, Files: 1, Bytes: 1}}); err == nil {
			t.Errorf("settings %+v accepted", m.Settings)
		}
	}
}

func TestOverridePrices(t *testing.T) {
	t.Parallel()
	base := DefaultPrices()
	if base.StepFunctionsStandardPer1000Transitions != 0.025 || base.Region != "us-east-1" || len(base.Sources) < 5 {
		t.Fatalf("embedded prices: %+v", base)
	}
	p, err := OverridePrices(strings.NewReader(`{"lambda_arm64_per_gb_second": 0.00001, "region": "eu-west-1"}`), base)
	if err != nil {
		t.Fatal(err)
	}
	if p.LambdaArm64PerGBSecond != 0.00001 || p.Region != "eu-west-1" || p.S3GetHeadPer1000 != base.S3GetHeadPer1000 {
		t.Errorf("override: %+v", p)
	}
	for _, bad := range []string{`{"lamda_arm64_per_gb_second": 1}`, `{"sqs_per_million_requests": -1}`, `[`} {
		if _, err := OverridePrices(strings.NewReader(bad), base); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestEmbeddedThroughput(t *testing.T) {
	t.Parallel()
	tp := DefaultThroughput()
	if tp.MeasuredAt == "" || tp.Machine == "" || tp.Command == "" || tp.Threads != 1 {
		t.Errorf("throughput.json lacks its provenance: %+v", tp)
	}
	for _, ext := range []string{".tif", ".gpkg", ".shp", ".geojson", ".kml", ".fgb", ".img", ".asc"} {
		r, from := tp.RateFor(ext)
		if from != ext || r.MBPerSecond <= 0 || r.OutputRatio <= 0 {
			t.Errorf("%s: measured row %q %+v", ext, from, r)
		}
	}
	if _, from := tp.RateFor(".jp2"); from != ".tif" {
		t.Errorf(".jp2 stands in as %s, want .tif", from)
	}
	if _, from := tp.RateFor(".zip"); from != ".gpkg" {
		t.Errorf(".zip stands in as %s, want .gpkg", from)
	}
}
