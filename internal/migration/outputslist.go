package migration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// InlineOutputsLimit is the largest outputs list (as JSON) that Convert
// returns in its reply. A larger one is written to staging and referenced
// (OutputsRef): the execution's state holds the list up to three times
// (Convert's result, Promote's input and result) beside the job, and Step
// Functions fails a state whose input or output is over 256 KiB
// (docs/decisions/0101). An output of a multi-layer source adds about
// 1.8 kB, so up to about 35 layers travel inline.
const InlineOutputsLimit = 64 << 10

// maxOutputsList bounds what Promote reads back: far more than any source
// has layers, far less than a Lambda's memory.
const maxOutputsList = 256 << 20

// OutputsRef points at an outputs list that Convert wrote to its job's
// staging directory, beside the staged outputs, as Cirrus passes large
// payloads through S3.
type OutputsRef struct {
	// Key is the list's key in the job's destination bucket.
	Key string `json:"key"`
	// Count is the number of outputs in it.
	Count int `json:"count"`
	// SHA256 is the hex SHA-256 of the object's bytes.
	SHA256 string `json:"sha256"`
}

// outputsListSuffix ends the key of a staged outputs list: the job's
// staged stem (the destination key without its extension) plus this.
const outputsListSuffix = ".outputs.json"

// outputsListKey is where Convert stages job's outputs list.
func outputsListKey(job Job) string {
	return job.StagingPrefix + strings.TrimSuffix(recipe.DestKey(job.SourceKey, recipe.Output{Extension: "."}, false), ".") + outputsListSuffix
}

// carryOutputs returns out as the state machine carries it: the list
// inline when it is small, else staged and referenced.
func (c *Convert) carryOutputs(ctx context.Context, job Job, out ConvertOutput) (ConvertOutput, error) {
	body, err := json.Marshal(out.Outputs)
	if err != nil {
		return ConvertOutput{}, fault.Systemic("migration.Convert", err)
	}
	if len(body) <= InlineOutputsLimit {
		return out, nil
	}
	key := outputsListKey(job)
	sum := sha256.Sum256(body)
	if _, err := c.store.Put(ctx, objectstore.PutRequest{
		Bucket: job.DestBucket, Key: key, Body: bytes.NewReader(body), Size: int64(len(body)), Scratch: true,
	}); err != nil {
		return ConvertOutput{}, fmt.Errorf("migration.Convert: stage outputs list %s: %w", key, err)
	}
	return ConvertOutput{
		Outputs:    []Artifact{},
		OutputsRef: &OutputsRef{Key: key, Count: len(out.Outputs), SHA256: hex.EncodeToString(sum[:])},
		ResultKey:  out.ResultKey,
	}, nil
}

// errOutputsListGone: the staged outputs list is not there (an earlier
// attempt that promoted the job deleted it with the rest of staging).
var errOutputsListGone = errors.New("migration: outputs list gone")

// readOutputs is converted's outputs list: inline, or read back from the
// object its OutputsRef names and checked against the reference's digest
// and count.
func readOutputs(ctx context.Context, store objectstore.Store, job Job, converted ConvertOutput) ([]Artifact, error) {
	ref := converted.OutputsRef
	if ref == nil {
		return converted.Outputs, nil
	}
	if !strings.HasPrefix(ref.Key, job.StagingPrefix) || job.StagingPrefix == "" {
		return nil, fault.Systemic("migration.Promote", fmt.Errorf("refusing to read %s: not in this job's staging", ref.Key))
	}
	rc, err := store.Open(ctx, job.DestBucket, ref.Key)
	if errors.Is(err, objectstore.ErrNotFound) {
		return nil, fmt.Errorf("migration.Promote: outputs list %s: %w", ref.Key, errOutputsListGone)
	}
	if err != nil {
		return nil, fmt.Errorf("migration.Promote: outputs list %s: %w", ref.Key, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxOutputsList+1))
	if err != nil {
		return nil, readError("migration.Promote: outputs list "+ref.Key, err)
	}
	if sum := sha256.Sum256(body); len(body) > maxOutputsList || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, fault.Systemic("migration.Promote", fmt.Errorf("%s is not the outputs list Convert wrote (%d bytes, sha256 %x, expected %s)", ref.Key, len(body), sum, ref.SHA256))
	}
	var outs []Artifact
	if err := json.Unmarshal(body, &outs); err != nil {
		return nil, fault.Systemic("migration.Promote", fmt.Errorf("%s: %w", ref.Key, err))
	}
	if len(outs) != ref.Count || len(outs) == 0 {
		return nil, fault.Systemic("migration.Promote", fmt.Errorf("%s lists %d outputs, the reference says %d", ref.Key, len(outs), ref.Count))
	}
	return outs, nil
}

// promoted is Promote's reply for outs: the list itself when it came
// inline, only its count and size when it came by reference.
func promoted(converted ConvertOutput, outs []Artifact) PromoteOutput {
	o := PromoteOutput{Outputs: withoutItemBodies(outs), Count: len(outs), Size: totalSize(outs)}
	if converted.OutputsRef != nil {
		o.Outputs = []Artifact{}
	}
	return o
}

// withoutItemBodies is outs without their items' documents, which are at
// their keys once promoted: the execution's output (and a run's report)
// does not carry them on.
func withoutItemBodies(outs []Artifact) []Artifact {
	out := make([]Artifact, len(outs))
	for i, a := range outs {
		if a.Item != nil {
			it := *a.Item
			it.Body = ""
			a.Item = &it
		}
		out[i] = a
	}
	return out
}
