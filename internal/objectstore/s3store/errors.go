package s3store

import (
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// MapError maps an S3 error at op on s3://bucket/key onto the taxonomy:
//
//   - NoSuchKey, NotFound, or a bare 404 (HEAD responses have no body, so a
//     HEAD on a missing bucket reads as not found too) → objectstore.ErrNotFound
//   - PreconditionFailed / 412 → objectstore.ErrPreconditionFailed
//   - 409 ConditionalRequestConflict (a concurrent conditional write),
//     OperationAborted, NoSuchUpload (an upload aborted under us), and any
//     other 409 Conflict (a concurrent request, e.g. parallel deletes) → TransientError
//   - SlowDown, InternalError, RequestTimeout, throttling, 429, 5xx,
//     connection resets, timeouts, deadline exceeded → TransientError
//   - AccessDenied, NoSuchBucket, InvalidAccessKeyId, SignatureDoesNotMatch,
//     KMS.* denials, 401/403 → SystemicError
//
// Anything else (e.g. a 400 InvalidArgument, a caller's cancellation) keeps
// its identity behind the op prefix and classifies as unknown.
func MapError(op, bucket, key string, err error) error {
	if err == nil {
		return nil
	}
	where := fmt.Sprintf("%s: s3://%s/%s", op, bucket, key)
	code, status := awsconfig.ErrorCode(err), awsconfig.StatusCode(err)
	switch {
	case code == "NoSuchBucket", code == "XAdminUserNotFound": // versitygw: unknown access key, as a 404
		return fault.Systemic(where, err)
	case code == "NoSuchUpload", code == "ConditionalRequestConflict", code == "OperationAborted",
		status == 409 && (code == "ExistingObjectIsDirectory" || code == "ObjectParentIsFile"):
		return fault.Transient(where, err)
	case code == "NoSuchKey", code == "NotFound", code == "" && status == 404, code == "NoSuchVersion":
		return fmt.Errorf("%s: %w (%w)", where, objectstore.ErrNotFound, err)
	case code == "PreconditionFailed", status == 412:
		return fmt.Errorf("%s: %w (%w)", where, objectstore.ErrPreconditionFailed, err)
	case status == 409:
		// Any other 409 Conflict on an object is a collision with a
		// concurrent request (parallel deletes pruning the key's directory
		// on a file-backed gateway; a bodiless 409 the SDK names by its
		// status text): retried, never dead-lettered at once.
		return fault.Transient(where, err)
	}
	return awsconfig.Wrap(where, err)
}

// NoSuchBucketError reports a missing bucket found by HeadBucket after a
// HEAD 404. Its ErrorCode is "NoSuchBucket", as a GET would have said.
type NoSuchBucketError struct {
	Bucket string
	Err    error
}

func (e *NoSuchBucketError) Error() string {
	return "NoSuchBucket: bucket " + e.Bucket + " does not exist: " + e.Err.Error()
}
func (e *NoSuchBucketError) Unwrap() error     { return e.Err }
func (e *NoSuchBucketError) ErrorCode() string { return "NoSuchBucket" }
func (e *NoSuchBucketError) ErrorMessage() string {
	return "The specified bucket does not exist"
}
func (e *NoSuchBucketError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }
