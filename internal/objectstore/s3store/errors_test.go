package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/objectstore"
)

// sdkError builds the error chain the SDK returns for an HTTP error
// response: OperationError → awshttp.ResponseError → smithyhttp.ResponseError
// → the API error (or nothing, for a HEAD without a body).
func sdkError(status int, apiErr error) error {
	if apiErr == nil {
		apiErr = &smithy.GenericAPIError{Code: http.StatusText(status)}
		if status == 404 {
			apiErr = &types.NotFound{}
		}
	}
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "Op", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: apiErr}, RequestID: "req",
	}}
}

func code(status int, c string) error {
	return sdkError(status, &smithy.GenericAPIError{Code: c, Message: "scripted"})
}

// exhausted wraps err as the SDK does after its last retry.
func exhausted(err error) error {
	var op *smithy.OperationError
	errors.As(err, &op)
	op.Err = &retry.MaxAttemptsError{Attempt: 2, Err: op.Err}
	return op
}

func sendError(err error) error {
	return &smithy.OperationError{ServiceID: "S3", OperationName: "Op", Err: &smithyhttp.RequestSendError{Err: err}}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestMapError(t *testing.T) {
	const (
		transient = "transient"
		systemic  = "systemic"
		notFound  = "not found"
		precond   = "precondition"
		unknown   = "unknown"
	)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		// Transient.
		{"SlowDown 503", code(503, "SlowDown"), transient},
		{"bare 503", sdkError(503, nil), transient},
		{"500 InternalError", code(500, "InternalError"), transient},
		{"bare 500", sdkError(500, nil), transient},
		{"502", sdkError(502, nil), transient},
		{"504", sdkError(504, nil), transient},
		{"RequestTimeout 400", code(400, "RequestTimeout"), transient},
		{"Throttling", code(400, "Throttling"), transient},
		{"ThrottlingException", code(400, "ThrottlingException"), transient},
		{"429", sdkError(429, nil), transient},
		{"409 ConditionalRequestConflict", code(409, "ConditionalRequestConflict"), transient},
		{"409 OperationAborted", code(409, "OperationAborted"), transient},
		{"409 ExistingObjectIsDirectory (a parent pruned under a write)", code(409, "ExistingObjectIsDirectory"), transient},
		{"409 ObjectParentIsFile", code(409, "ObjectParentIsFile"), transient},
		{"NoSuchUpload (aborted under us)", code(404, "NoSuchUpload"), transient},
		{"KMS throttling", code(400, "KMS.ThrottlingException"), transient},
		{"SlowDown after retries", exhausted(code(503, "SlowDown")), transient},
		{"connection reset", sendError(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), transient},
		{"connection refused", sendError(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), transient},
		{"net timeout", sendError(&net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}), transient},
		{"body cut short", fmt.Errorf("read body: %w", io.ErrUnexpectedEOF), transient},
		{"deadline", &smithy.OperationError{ServiceID: "S3", OperationName: "Op", Err: &smithy.CanceledError{Err: context.DeadlineExceeded}}, transient},
		{"retry quota", &smithy.OperationError{ServiceID: "S3", OperationName: "Op", Err: &ratelimit.QuotaExceededError{}}, transient},
		// Systemic.
		{"AccessDenied", code(403, "AccessDenied"), systemic},
		{"bare 403 (HEAD)", sdkError(403, nil), systemic},
		{"NoSuchBucket", sdkError(404, &types.NoSuchBucket{}), systemic},
		{"InvalidAccessKeyId", code(403, "InvalidAccessKeyId"), systemic},
		{"SignatureDoesNotMatch", code(403, "SignatureDoesNotMatch"), systemic},
		{"ExpiredToken", code(400, "ExpiredToken"), systemic},
		{"KMS.DisabledException", code(400, "KMS.DisabledException"), systemic},
		{"KMS.AccessDeniedException", code(400, "KMS.AccessDeniedException"), systemic},
		{"KMS.NotFoundException", code(400, "KMS.NotFoundException"), systemic},
		{"KMS.KMSInvalidStateException", code(400, "KMS.KMSInvalidStateException"), systemic},
		{"versitygw unknown user", code(404, "XAdminUserNotFound"), systemic},
		{"PermanentRedirect (wrong region)", code(301, "PermanentRedirect"), systemic},
		// Not found / precondition.
		{"NoSuchKey", sdkError(404, &types.NoSuchKey{}), notFound},
		{"HEAD 404", sdkError(404, nil), notFound},
		{"412", code(412, "PreconditionFailed"), precond},
		{"bare 412 (HEAD)", sdkError(412, &smithy.GenericAPIError{}), precond},
		// Unknown: keeps its identity.
		{"400 InvalidArgument", code(400, "InvalidArgument"), unknown},
		{"caller canceled", &smithy.OperationError{ServiceID: "S3", OperationName: "Op", Err: &smithy.CanceledError{Err: context.Canceled}}, unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MapError("s3.Op", "b", "k", tc.err)
			var verdict string
			switch {
			case errors.Is(got, objectstore.ErrNotFound):
				verdict = notFound
			case errors.Is(got, objectstore.ErrPreconditionFailed):
				verdict = precond
			default:
				switch fault.TierOf(got) {
				case fault.TierTransient:
					verdict = transient
				case fault.TierSystemic:
					verdict = systemic
				default:
					verdict = unknown
				}
			}
			if verdict != tc.want {
				t.Errorf("MapError(%v) = %v: %s, want %s", tc.err, got, verdict, tc.want)
			}
			if verdict == notFound || verdict == precond {
				if tier := fault.TierOf(got); tier != fault.TierUnknown {
					t.Errorf("%s carries tier %s; callers decide", verdict, tier)
				}
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("the SDK error is lost: %v", got)
			}
			if got.Error() == "" || !containsAll(got.Error(), "s3.Op", "s3://b/k") {
				t.Errorf("message %q lacks the operation and object", got.Error())
			}
		})
	}
	if MapError("op", "b", "k", nil) != nil {
		t.Error("MapError(nil) != nil")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
