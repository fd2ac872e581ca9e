package cost

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/internal/quarantine"
	"github.com/geomigrate/geomigrate/statemachine"
)

// Settings are the deployment and the model's assumptions. DefaultSettings
// are infra's defaults; each is a flag of `geomigrate plan`.
type Settings struct {
	// Architecture of the functions: arm64 (infra's default) or x86_64.
	Architecture string `json:"architecture"`
	// ConvertMemoryMB is the convert function's memory (infra
	// convertMemoryMB, default 10,240); SmallMemoryMB the other functions'
	// (smallFunctionMemoryMB, default 512).
	ConvertMemoryMB int `json:"convert_memory_mb"`
	SmallMemoryMB   int `json:"small_memory_mb"`
	// Concurrency is the account's Lambda concurrency available to the run
	// (1,000 is the default quota per Region: "Lambda gives your account a
	// total concurrency limit of 1,000 concurrent executions across all
	// functions in an AWS Region",
	// https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html).
	Concurrency int `json:"concurrency"`

	// MemoryPerVCPUMB: Lambda allocates CPU in proportion to memory; "at
	// 1,769 MB, a function has the equivalent of one vCPU"
	// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
	MemoryPerVCPUMB float64 `json:"memory_per_vcpu_mb"`
	// UsefulVCPUs caps the speed-up from more memory: the throughput was
	// measured with one GDAL thread, and only part of a conversion (COG
	// compression) uses more. 1 is the conservative reading.
	UsefulVCPUs float64 `json:"useful_vcpus"`
	// CPUFactor scales the measured rate to the Lambda CPU (1: a Lambda
	// vCPU converts as fast as a core of the measuring machine).
	CPUFactor float64 `json:"cpu_factor"`
	// HashReadMBPerSecond is HashCheck's read of the source from S3 into
	// SHA-256 (one stream; an assumption, not measured here: no S3).
	HashReadMBPerSecond float64 `json:"hash_read_mb_per_s"`
	// StepMS is the fixed duration of a HashCheck, Promote or Classify
	// invocation (a few S3 and DynamoDB round trips; an assumption).
	StepMS float64 `json:"step_ms"`
	// SourceReadWhole and RangeReadBytes are Convert's read-ahead of a
	// source read by range (objectstore.ReadAhead, --source-read-whole and
	// --source-read-block): one GET up to SourceReadWhole bytes, above it
	// one per aligned block of RangeReadBytes (GDAL's own reads, many more,
	// are served from them).
	SourceReadWhole int64 `json:"source_read_whole"`
	RangeReadBytes  int64 `json:"range_read_bytes"`
	// PartBytes is the multipart threshold and part size of output uploads
	// (s3store.DefaultPartSize): an output above it costs one PUT per part
	// plus a create and a complete request.
	PartBytes int64 `json:"part_bytes"`
	// MaxConcurrency is the backfill's Distributed Map MaxConcurrency (the
	// run-time policy's backfill.max_concurrency): at most that many
	// migrate executions run at once.
	MaxConcurrency int `json:"max_concurrency"`
	// IOMBPerSecond is Convert's download of the source and upload of the
	// output, and Promote's server-side copy of the output to its key (an
	// assumption, not measured here: no S3).
	IOMBPerSecond float64 `json:"io_mb_per_s"`
	// LogBytesPerTransition is the execution log volume per state
	// transition at the state machine's log level (ALL logs every
	// transition's input and output; an assumption).
	LogBytesPerTransition int64 `json:"log_bytes_per_transition"`
	// QuarantineCopyLimit is the largest input a quarantine bundle copies
	// (quarantine.DefaultCopyLimit): larger ones are referenced.
	QuarantineCopyLimit int64 `json:"quarantine_copy_limit"`
}

// rangeGets is the GETs of Convert's read-ahead over a source of n bytes
// read once from start to end (a GDAL reading back and forth over more
// than the blocks kept costs more).
func (s Settings) rangeGets(n int64) int64 {
	if n <= s.SourceReadWhole {
		return 1
	}
	return ceilDiv(n, s.RangeReadBytes)
}

// DefaultSettings are infra's defaults and the documented assumptions.
func DefaultSettings() Settings {
	return Settings{
		Architecture:          "arm64",
		ConvertMemoryMB:       10240,
		SmallMemoryMB:         512,
		Concurrency:           1000,
		MemoryPerVCPUMB:       1769,
		UsefulVCPUs:           1,
		CPUFactor:             1,
		HashReadMBPerSecond:   80,
		StepMS:                100,
		SourceReadWhole:       objectstore.DefaultWholeObjectMax,
		RangeReadBytes:        objectstore.DefaultBlockSize,
		PartBytes:             16 << 20,
		MaxConcurrency:        policy.DefaultMaxConcurrency,
		IOMBPerSecond:         80,
		LogBytesPerTransition: 2000,
		QuarantineCopyLimit:   quarantine.DefaultCopyLimit,
	}
}

// Validate refuses settings the arithmetic cannot use.
func (s Settings) Validate() error {
	switch {
	case s.Architecture != "arm64" && s.Architecture != "x86_64":
		return fmt.Errorf("architecture %q: want arm64 or x86_64", s.Architecture)
	case s.ConvertMemoryMB < 128 || s.ConvertMemoryMB > 10240 || s.SmallMemoryMB < 128 || s.SmallMemoryMB > 10240:
		return fmt.Errorf("function memory must be within 128..10240 MB (convert %d, small %d)", s.ConvertMemoryMB, s.SmallMemoryMB)
	case s.Concurrency < 1:
		return fmt.Errorf("concurrency %d: want at least 1", s.Concurrency)
	case s.MaxConcurrency < 1:
		return fmt.Errorf("max concurrency %d: want at least 1", s.MaxConcurrency)
	case s.IOMBPerSecond <= 0 || s.LogBytesPerTransition < 0:
		return fmt.Errorf("model parameters must be positive: %+v", s)
	case s.MemoryPerVCPUMB <= 0 || s.UsefulVCPUs <= 0 || s.CPUFactor <= 0 || s.HashReadMBPerSecond <= 0 || s.StepMS < 0 || s.SourceReadWhole < 0 || s.RangeReadBytes <= 0 || s.PartBytes <= 0:
		return fmt.Errorf("model parameters must be positive: %+v", s)
	}
	return nil
}

// Group is a number of files of one source format taking one path.
type Group struct {
	Format string `json:"format"` // source extension, e.g. ".tif"
	Path   Path   `json:"path"`
	Files  int64  `json:"files"`
	Bytes  int64  `json:"bytes"` // all files of the group, sidecars included
	// NameOnly: skipped on the name alone (not geospatial): HashCheck makes
	// no store request and reads nothing.
	NameOnly bool `json:"name_only,omitempty"`
	// RangeRead: Convert reads the source by ranged GETs
	// (formats.ReadableByRange) rather than one download.
	RangeRead bool `json:"range_read,omitempty"`
	// Container: converted by the container task (ECS Fargate), one task
	// launch per file. Its time is charged as the Lambda's (Fargate's
	// vCPU and memory prices are not in the table).
	Container bool `json:"container,omitempty"`
}

// Estimate is the cost of a workload.
type Estimate struct {
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`

	Executions         int64   `json:"executions"`
	Transitions        int64   `json:"transitions"`
	LambdaInvocations  int64   `json:"lambda_invocations"`
	LambdaSeconds      float64 `json:"lambda_seconds"`
	LambdaGBSeconds    float64 `json:"lambda_gb_seconds"`
	ConvertSeconds     float64 `json:"convert_seconds"`
	ExpressGBSeconds   float64 `json:"express_gb_seconds"`
	LongestExecution   float64 `json:"longest_execution_seconds"`
	OverExpressLimit   int64   `json:"executions_over_express_limit"`
	S3GetHead          int64   `json:"s3_get_head"`
	S3PutCopyList      int64   `json:"s3_put_copy_list"`
	S3Delete           int64   `json:"s3_delete"`
	DynamoDBReadUnits  int64   `json:"dynamodb_read_units"`
	DynamoDBWriteUnits int64   `json:"dynamodb_write_units"`
	SQSRequests        int64   `json:"sqs_requests"`
	WallClockSeconds   float64 `json:"wall_clock_seconds"`
	// IndexWrites are the status index's write units (included in
	// DynamoDBWriteUnits); ContainerTasks the Fargate tasks started.
	IndexWrites    int64 `json:"index_writes"`
	ContainerTasks int64 `json:"container_tasks"`
	// QuarantineBytes are the routed files' sources kept in quarantine;
	// LogBytes the execution logs at the state machine's log level.
	QuarantineBytes int64 `json:"quarantine_bytes"`
	LogBytes        int64 `json:"log_bytes"`
	// Bounds are the duration under each quota, longest (binding) first;
	// WallClockSeconds is the first.
	Bounds   []Bound           `json:"bounds"`
	StandIns map[string]string `json:"rate_stand_ins,omitempty"` // format → measured row used

	Cost Cost `json:"cost_usd"`
	// PerThousandStandard and PerThousandExpress are the total per 1,000
	// files, with the state machine as a Standard or an Express workflow.
	PerThousandStandard float64 `json:"per_1000_files_standard_usd"`
	PerThousandExpress  float64 `json:"per_1000_files_express_usd"`
}

// Cost is the estimate in USD, by service.
type Cost struct {
	StepFunctionsStandard float64 `json:"stepfunctions_standard"`
	StepFunctionsExpress  float64 `json:"stepfunctions_express"`
	Lambda                float64 `json:"lambda"`
	S3                    float64 `json:"s3"`
	DynamoDB              float64 `json:"dynamodb"`
	SQS                   float64 `json:"sqs"`
	// Quarantine is one month of S3 Standard storage of the routed
	// sources; Logs the execution logs' ingestion.
	Quarantine float64 `json:"quarantine_storage_month"`
	Logs       float64 `json:"execution_logs"`
	// TotalStandard and TotalExpress are everything, with Step Functions
	// Standard or Express.
	TotalStandard float64 `json:"total_standard"`
	TotalExpress  float64 `json:"total_express"`
}

// ExpressLimitSeconds is the longest an Express execution may run.
const ExpressLimitSeconds = 300

// Model is everything Calculate needs besides the workload.
type Model struct {
	Prices     Prices
	Throughput Throughput
	Walks      map[Path]Walk
	PerFile    map[Path]Requests
	Settings   Settings
	// Backfill is what a backfill adds around the migrate executions
	// (BackfillCost; Calculate prices migrate executions only).
	Backfill BackfillWalk
	Quotas   Quotas
}

// Calculate estimates the cost of running the workload's files through the
// migrate state machine once each. It is arithmetic only: per group, per
// file of the group's average size,
//
//   - transitions: the path's walk (states entered);
//   - Lambda: one request per task of the walk; HashCheck StepMS plus the
//     read at HashReadMBPerSecond (nothing read when NameOnly), Convert the
//     measured rate (overhead + bytes / rate) divided by the speed its
//     memory buys (min(memory / MemoryPerVCPUMB, UsefulVCPUs) × CPUFactor),
//     Promote and Classify StepMS; GB-seconds at each function's memory;
//   - S3, DynamoDB: PerFile[path], plus for a range-read source the GETs
//     of its read-ahead (Settings.rangeGets) instead of the download,
//     and the multipart requests of outputs over
//     PartBytes (output bytes = source bytes × the measured output ratio);
//   - SQS: one request per SendMessage of the walk (messages < 64 KB);
//   - Express: one request per execution and its duration (the tasks' sum,
//     rounded up to the billing increment) at the billed memory;
//   - wall clock: Lambda seconds / Concurrency, but never less than the
//     longest execution.
func Calculate(m Model, groups []Group) (Estimate, error) {
	s := m.Settings
	if err := s.Validate(); err != nil {
		return Estimate{}, fmt.Errorf("cost.Calculate: %w", err)
	}
	if err := m.Quotas.Validate(); err != nil {
		return Estimate{}, fmt.Errorf("cost.Calculate: %w", err)
	}
	perGBs := m.Prices.LambdaArm64PerGBSecond
	if s.Architecture == "x86_64" {
		perGBs = m.Prices.LambdaX8664PerGBSecond
	}
	speed := math.Min(float64(s.ConvertMemoryMB)/s.MemoryPerVCPUMB, s.UsefulVCPUs) * s.CPUFactor
	convertGB, smallGB := float64(s.ConvertMemoryMB)/1024, float64(s.SmallMemoryMB)/1024
	expressGB := m.Prices.StepFunctionsExpressMemoryMB / 1024
	increment := m.Prices.StepFunctionsExpressIncrementMS / 1000

	var e Estimate
	for _, g := range groups {
		if g.Files <= 0 {
			continue
		}
		walk, ok := m.Walks[g.Path]
		if !ok {
			return Estimate{}, fmt.Errorf("cost.Calculate: no walk for path %q", g.Path)
		}
		n := float64(g.Files)
		avg := float64(g.Bytes) / n
		rate, from := m.Throughput.RateFor(g.Format)
		if from != g.Format && g.Path != Skipped {
			if e.StandIns == nil {
				e.StandIns = map[string]string{}
			}
			e.StandIns[g.Format] = from
		}
		e.Files += g.Files
		e.Bytes += g.Bytes
		e.Executions += g.Files
		e.Transitions += g.Files * int64(walk.Transitions)
		e.LogBytes += g.Files * int64(walk.Transitions) * s.LogBytesPerTransition
		// A routed file's bundle copies its input up to the copy limit and
		// references a larger one; a source HashCheck rejected is gone or
		// not the pipeline's, and is not counted.
		if g.Path == Remediation && int64(avg) <= s.QuarantineCopyLimit {
			e.QuarantineBytes += g.Bytes
		}
		e.LambdaInvocations += g.Files * int64(len(walk.Lambdas))
		e.SQSRequests += g.Files * int64(walk.SQSSends)
		if g.Container {
			e.ContainerTasks += g.Files
		}

		// One execution of this group's average file.
		var execSeconds, gbSeconds float64
		for _, task := range walk.Lambdas {
			var d, gb float64
			switch task {
			case "HashCheck":
				d, gb = s.StepMS/1000, smallGB
				if !g.NameOnly && g.Path != Rejected {
					d += avg / 1e6 / s.HashReadMBPerSecond // rejected before reading
				}
			case "Convert":
				gb = convertGB
				if g.Path == Remediation {
					d = rate.OverheadMS / 1000 / speed // refused in preflight, before the bytes are converted
				} else {
					// Converting, then downloading the source (when not
					// read by range) and uploading the output.
					d = rate.Seconds(int64(avg)) / speed
					io := avg * rate.OutputRatio
					if !g.RangeRead {
						io += avg
					}
					d += io / 1e6 / s.IOMBPerSecond
				}
				e.ConvertSeconds += d * n
			case "Promote":
				// The staged output copied to its key.
				d, gb = s.StepMS/1000+avg*rate.OutputRatio/1e6/s.IOMBPerSecond, smallGB
			default: // Classify
				d, gb = s.StepMS/1000, smallGB
			}
			execSeconds += d
			gbSeconds += d * gb
		}
		e.LambdaSeconds += execSeconds * n
		e.LambdaGBSeconds += gbSeconds * n
		e.LongestExecution = math.Max(e.LongestExecution, execSeconds)
		if execSeconds > ExpressLimitSeconds {
			e.OverExpressLimit += g.Files
		}
		e.ExpressGBSeconds += math.Ceil(execSeconds/increment-1e-9) * increment * expressGB * n

		if g.NameOnly {
			continue // decided on the name: no store request
		}
		r := m.PerFile[g.Path]
		getHead, putList := int64(r.S3GetHead), int64(r.S3PutCopyList)
		if g.Path == Converted {
			if g.RangeRead {
				// The download's GET becomes the ranged GETs, pinned to
				// the source's ETag with no HEAD around them (net: the
				// ranged GETs beyond one; TestRequestsPerFile counts both
				// ways).
				getHead += s.rangeGets(int64(avg)) - 1
			}
			if out := int64(avg * rate.OutputRatio); out > s.PartBytes {
				// One PutObject becomes create + parts + complete.
				putList += ceilDiv(out, s.PartBytes) + 1
			}
		}
		e.S3GetHead += g.Files * getHead
		e.S3PutCopyList += g.Files * putList
		e.S3Delete += g.Files * int64(r.S3Delete)
		e.DynamoDBReadUnits += g.Files * int64(r.DynamoDBRead)
		e.DynamoDBWriteUnits += g.Files * int64(r.DynamoDBWrite)
		iw := g.Files * int64(r.DynamoDBIndexWrite)
		e.IndexWrites += iw
		e.DynamoDBWriteUnits += iw
	}
	e.Bounds = Bounds(m, e)
	e.WallClockSeconds = e.Bounds[0].Seconds

	p := m.Prices
	c := &e.Cost
	c.StepFunctionsStandard = float64(e.Transitions) / 1000 * p.StepFunctionsStandardPer1000Transitions
	c.StepFunctionsExpress = float64(e.Executions)/1e6*p.StepFunctionsExpressPerMillionRequests + e.ExpressGBSeconds*p.StepFunctionsExpressPerGBSecond
	c.Lambda = float64(e.LambdaInvocations)/1e6*p.LambdaPerMillionRequests + e.LambdaGBSeconds*perGBs
	c.S3 = float64(e.S3GetHead)/1000*p.S3GetHeadPer1000 + float64(e.S3PutCopyList)/1000*p.S3PutCopyPostListPer1000
	c.DynamoDB = float64(e.DynamoDBReadUnits)/1e6*p.DynamoDBPerMillionReadUnits + float64(e.DynamoDBWriteUnits)/1e6*p.DynamoDBPerMillionWriteUnits
	c.SQS = float64(e.SQSRequests) / 1e6 * p.SQSPerMillionRequests
	c.Quarantine = float64(e.QuarantineBytes) / 1e9 * p.S3StandardPerGBMonth
	c.Logs = float64(e.LogBytes) / 1e9 * p.CloudWatchLogsPerGB
	rest := c.Lambda + c.S3 + c.DynamoDB + c.SQS + c.Quarantine + c.Logs
	c.TotalStandard = c.StepFunctionsStandard + rest
	c.TotalExpress = c.StepFunctionsExpress + rest
	if e.Files > 0 {
		e.PerThousandStandard = c.TotalStandard / float64(e.Files) * 1000
		e.PerThousandExpress = c.TotalExpress / float64(e.Files) * 1000
	}
	return e, nil
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 1
	}
	return (a + b - 1) / b
}

// StandInList is the formats estimated with another format's rate, sorted.
func (e Estimate) StandInList() []string {
	var out []string
	for f, from := range e.StandIns {
		out = append(out, f+" as "+from)
	}
	sort.Strings(out)
	return out
}

// DefaultModel is the embedded prices, the measured throughput, the
// request table, the walks of statemachine.Migrate and Backfill, and
// DefaultSettings.
func DefaultModel(ctx context.Context) (Model, error) {
	walks, err := Walks(ctx, statemachine.Migrate)
	if err != nil {
		return Model{}, err
	}
	backfill, err := WalkBackfill(ctx, statemachine.Backfill)
	if err != nil {
		return Model{}, err
	}
	return Model{Prices: DefaultPrices(), Throughput: DefaultThroughput(), Walks: walks, PerFile: PerFile, Settings: DefaultSettings(), Backfill: backfill, Quotas: DefaultQuotas()}, nil
}
