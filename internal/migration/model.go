// Package migration holds the four steps of the state machine — HashCheck,
// Convert, Promote and Classify — as plain Go handlers over the ports
// (object store, state store, conversion engine). The Lambda entry points in
// functions/* and the local executor both call these handlers; neither
// knows more about the work than how to reach them.
package migration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"

	"github.com/geomigrate/geomigrate/internal/formats"
	"github.com/geomigrate/geomigrate/internal/recipe"
)

// Invocation is what the state machine tells a handler about the call
// ($$.Execution.Id, $$.State.Name, $$.State.RetryCount).
type Invocation struct {
	Execution string `json:"execution"`
	State     string `json:"state"`
	Attempt   int    `json:"attempt"` // 0 on the first attempt
	// Started is the execution's start time ($$.Execution.StartTime, RFC
	// 3339, https://docs.aws.amazon.com/step-functions/latest/dg/input-output-contextobject.html),
	// passed to HashCheck for the job deadline.
	Started string `json:"started,omitempty"`
}

// Source is the canonical input produced by the Normalize states.
type Source struct {
	Bucket      string `json:"bucket"`
	Key         string `json:"key"`
	KeyEncoding string `json:"key_encoding"` // "url" (S3 notifications) or "plain"
	DatasetID   string `json:"dataset_id"`
	// Size is the source's bytes as a CLI listing found them (a local
	// stat, an S3 listing's Size; a directory source: its files
	// together), 0 when not listed: what a run's progress estimates its
	// time left by. Not part of the execution input: HashCheck reads the
	// object's own size.
	Size int64 `json:"-"`
}

// DecodedKey returns the object key: notification keys are URL-encoded in
// query style ("red flower.jpg" arrives as "red+flower.jpg").
func (s Source) DecodedKey() (string, error) {
	if s.KeyEncoding != "url" {
		return s.Key, nil
	}
	k, err := url.QueryUnescape(s.Key)
	if err != nil {
		return "", fmt.Errorf("migration.DecodedKey: key %q is not URL-encoded: %w", s.Key, err)
	}
	return k, nil
}

// Job is the work order HashCheck hands to Convert and Promote: the
// identity of the job and everything needed to do it without asking again.
type Job struct {
	ID            string        `json:"id"`
	DatasetID     string        `json:"dataset_id"`
	SourceBucket  string        `json:"source_bucket"`
	SourceKey     string        `json:"source_key"`
	SourceSize    int64         `json:"source_size"`
	SourceETag    string        `json:"source_etag,omitempty"`
	SourceSHA256  string        `json:"source_sha256"`
	Fingerprint   string        `json:"fingerprint"` // "sha256" or "fast"
	RecipeHash    string        `json:"recipe_hash"`
	Recipe        recipe.Recipe `json:"recipe"`
	DestBucket    string        `json:"dest_bucket"`
	DestKey       string        `json:"dest_key"` // predicted primary output key
	StagingPrefix string        `json:"staging_prefix"`
	// SidecarETags are the ETags of the sidecars HashCheck fingerprinted
	// with the source, by key: a source read in place is checked against
	// them and SourceETag after conversion instead of being hashed again.
	SidecarETags map[string]string `json:"sidecar_etags,omitempty"`
	// SidecarsListed says SidecarETags holds every sidecar HashCheck
	// found (none when it is empty): Convert reads those instead of
	// listing the source's prefix again. False in payloads of earlier
	// versions.
	SidecarsListed bool `json:"sidecars_listed,omitempty"`
	// SourceModified is the source's Last-Modified as HashCheck's HEAD
	// said (zero when the store keeps none, or in payloads of earlier
	// versions): the datetime of items whose file declares none.
	SourceModified time.Time `json:"source_modified,omitzero"`
}

// JobID is the idempotency key: dataset_id:chunk_hash (docs/decisions/0006),
// extended with the recipe (a new recipe migrates again) and a short digest
// of the source location (the same bytes under two keys are two migrations,
// each with its own output). Never a timestamp.
func JobID(dataset, bucket, key, sha, recipeHash string) string {
	loc := sha256.Sum256([]byte(bucket + "/" + key))
	return dataset + ":" + sha + ":" + recipeHash + ":" + hex.EncodeToString(loc[:6])
}

// Artifact is one converted output on its way from staging to its final key.
type Artifact struct {
	StagingKey  string `json:"staging_key"`
	DestKey     string `json:"dest_key"`
	Format      string `json:"format"`
	ContentType string `json:"content_type"`
	Layer       string `json:"layer,omitempty"`
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	// StagedETag is the staged object's ETag as its Put answered: Promote
	// copies that version without reading its description first ("" in
	// a payload of an older version: the store reads it).
	StagedETag string   `json:"staged_etag,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Fidelity is what the engine proved equal between this output and its
	// source before it was staged.
	Fidelity *recipe.Fidelity `json:"fidelity,omitempty"`
	// Item is the output's STAC Item, written by Promote after the output
	// (stac.go).
	Item *StagedItem `json:"stac_item,omitempty"`
}

// Decisions of HashCheck.
const (
	DecisionConvert = "convert"
	DecisionSkip    = "skip"
)

// Skip reasons.
const (
	ReasonAlreadyMigrated     = "already_migrated"
	ReasonInProgress          = "in_progress"
	ReasonAwaitingRemediation = "awaiting_remediation"
	ReasonSidecar             = "sidecar"
	ReasonFolderMarker        = "folder_marker"
	// ReasonExcluded: the recipe file's include/exclude globs leave the
	// key out; reported as ignored, like ReasonNotGeospatial.
	ReasonExcluded = "excluded_by_recipe"
	// ReasonNotGeospatial (candidates.go) is reported as "ignored".
)

type (
	HashCheckInput struct {
		Source  Source     `json:"source"`
		Context Invocation `json:"context"`
	}
	HashCheckOutput struct {
		Source   Source `json:"source"`
		Job      Job    `json:"job"`
		Decision string `json:"decision"`
		Reason   string `json:"reason,omitempty"`
		// Route is set with DecisionConvert: the job's measured work and
		// the limits the state machine routes it by.
		Route *Route `json:"route,omitempty"`
	}
	ConvertInput struct {
		Job     Job        `json:"job"`
		Context Invocation `json:"context"`
	}
	ConvertOutput struct {
		// Outputs is the outputs list, empty when it travels by
		// OutputsRef.
		Outputs []Artifact `json:"outputs"`
		// OutputsRef is set instead of Outputs when the list is over
		// InlineOutputsLimit (docs/decisions/0101); always written, as
		// the state machine selects it.
		OutputsRef *OutputsRef `json:"outputs_ref"`
		// ResultKey is the container task's result object (in the
		// destination bucket), which Promote deletes with the staged
		// outputs; empty when the Convert Lambda converted.
		ResultKey string `json:"result_key,omitempty"`
	}
	PromoteInput struct {
		Job       Job           `json:"job"`
		Converted ConvertOutput `json:"converted"`
		Context   Invocation    `json:"context"`
	}
	PromoteOutput struct {
		// Outputs is what was promoted, empty when Convert's list came by
		// reference (the list is not carried on into the execution's
		// output, whose size is bounded too).
		Outputs []Artifact `json:"outputs"`
		// Count and Size are the number and total bytes of the outputs
		// promoted, whichever way the list came.
		Count int   `json:"outputs_count"`
		Size  int64 `json:"outputs_size"`
	}
	// CaughtError is what a Catch puts at ResultPath.
	CaughtError struct {
		Error string `json:"Error"`
		Cause string `json:"Cause"`
	}
	ClassifyInput struct {
		Source  Source      `json:"source"`
		Job     Job         `json:"job"` // empty when HashCheck failed
		Error   CaughtError `json:"error"`
		Context Invocation  `json:"context"`
	}
	ClassifyOutput struct {
		Tier    string       `json:"tier"`
		Route   string       `json:"route"` // "remediation" or "dlq"
		Message RouteMessage `json:"message"`
	}
)

// kindByExtension guesses what a source will become before it is opened, so
// HashCheck can find an earlier output by key. The conversion decides for
// real; a wrong guess only costs a state-store lookup.
func kindByExtension(key string) recipe.Kind {
	if formats.PredictKind(key) == formats.Vector {
		return recipe.Vector
	}
	return recipe.Raster
}

// predictDestKey is the key of the single output a source most likely gets.
func predictDestKey(prefix, srcKey string, r recipe.Recipe) string {
	format := r.RasterFormat
	if kindByExtension(srcKey) == recipe.Vector {
		format = r.VectorFormat
	}
	info := recipe.Formats[format]
	return recipe.OutputKey(prefix, srcKey, recipe.Output{Format: info.Format, Extension: info.Extension, Kind: info.Kind}, false)
}
