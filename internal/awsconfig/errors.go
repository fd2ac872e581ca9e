package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// ErrorCode returns the API error code carried by err ("" when none):
// "SlowDown", "NoSuchKey", "ConditionalCheckFailedException", …
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// StatusCode returns the HTTP status of the response that produced err
// (0 when the request got no response).
func StatusCode(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	var sre *smithyhttp.ResponseError
	if errors.As(err, &sre) {
		return sre.HTTPStatusCode()
	}
	return 0
}

// Class is a coarse verdict on an SDK error.
type Class int

const (
	// Unclassified: neither rule matched; the adapter decides (usually an
	// unknown error that classifies as tier unknown).
	Unclassified Class = iota
	// Transient: throttling, 5xx, timeouts, dropped connections.
	Transient
	// Systemic: credentials, permissions, missing resources, configuration.
	Systemic
	// Canceled: the caller canceled the context (not a deadline).
	Canceled
)

// transientCodes are error codes, across S3, DynamoDB, SQS and KMS, that
// mean "try again later".
var transientCodes = map[string]bool{
	"SlowDown":                                true,
	"InternalError":                           true,
	"InternalServerError":                     true,
	"InternalFailure":                         true,
	"ServiceUnavailable":                      true,
	"ServiceUnavailableException":             true,
	"RequestTimeout":                          true,
	"RequestTimeoutException":                 true,
	"Throttling":                              true,
	"ThrottlingException":                     true,
	"ThrottledException":                      true,
	"TooManyRequestsException":                true,
	"RequestThrottled":                        true,
	"RequestThrottledException":               true,
	"RequestLimitExceeded":                    true,
	"ProvisionedThroughputExceededException":  true,
	"PriorRequestNotComplete":                 true,
	"BandwidthLimitExceeded":                  true,
	"EC2ThrottledException":                   true,
	"TransactionInProgressException":          true,
	"KMS.ThrottlingException":                 true,
	"KMS.KMSInternalException":                true,
	"KMS.DependencyTimeoutException":          true,
	"AWS.SimpleQueueService.RequestThrottled": true,
}

// systemicCodes mean the worker or its environment is wrong; retrying the
// same request cannot help.
var systemicCodes = map[string]bool{
	"AccessDenied":                            true,
	"AccessDeniedException":                   true,
	"AllAccessDisabled":                       true,
	"AccountProblem":                          true,
	"InvalidAccessKeyId":                      true,
	"InvalidClientTokenId":                    true,
	"SignatureDoesNotMatch":                   true,
	"IncompleteSignature":                     true,
	"IncompleteSignatureException":            true,
	"MissingAuthenticationToken":              true,
	"MissingAuthenticationTokenException":     true,
	"UnrecognizedClientException":             true,
	"ExpiredToken":                            true,
	"ExpiredTokenException":                   true,
	"InvalidToken":                            true,
	"TokenRefreshRequired":                    true,
	"NoSuchBucket":                            true,
	"PermanentRedirect":                       true,
	"AuthorizationHeaderMalformed":            true,
	"KMSAccessDenied":                         true,
	"KMS.AccessDeniedException":               true,
	"KMS.DisabledException":                   true,
	"KMS.KMSInvalidStateException":            true,
	"KMS.NotFoundException":                   true,
	"KMS.InvalidKeyUsageException":            true,
	"KMS.InvalidGrantTokenException":          true,
	"KMS.KeyUnavailableException":             true,
	"ResourceNotFoundException":               true,
	"QueueDoesNotExist":                       true,
	"AWS.SimpleQueueService.NonExistentQueue": true,
	"InvalidSecurity":                         true,
	"LimitExceededException":                  true,
	"UnknownOperationException":               true,
	"InvalidAction":                           true,
	"InvalidSignatureException":               true,
}

// Classify gives the shared verdict on an SDK error. Adapters apply their
// own rules first (S3 404 → not found, 412 → precondition failed, DynamoDB
// conditional check → conflict) and fall back to this.
func Classify(err error) Class {
	if err == nil {
		return Unclassified
	}
	code := ErrorCode(err)
	if transientCodes[code] {
		return Transient
	}
	if systemicCodes[code] || strings.HasPrefix(code, "KMS.") {
		return Systemic
	}
	switch st := StatusCode(err); {
	case st == 429 || st == 500 || st == 502 || st == 503 || st == 504:
		return Transient
	case st == 401 || st == 403:
		return Systemic
	case st >= 500:
		return Transient
	case st != 0:
		return Unclassified
	}
	if IsNetworkTransient(err) {
		return Transient
	}
	if errors.Is(err, context.Canceled) {
		return Canceled
	}
	return Unclassified
}

// IsNetworkTransient reports failures below HTTP that a later attempt may
// not meet: deadlines, timeouts, resets, refused or dropped connections, a
// body cut short, and the SDK's own retry-quota error.
func IsNetworkTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var qe *ratelimit.QuotaExceededError
	if errors.As(err, &qe) {
		return true
	}
	var rse *smithyhttp.RequestSendError
	if errors.As(err, &rse) && !errors.Is(err, context.Canceled) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe") ||
		strings.HasSuffix(msg, ": EOF") || strings.Contains(msg, "use of closed network connection")
}

// Wrap maps err at op onto the fault taxonomy with the shared rules:
// Transient → *fault.TransientError, Systemic → *fault.SystemicError, other
// errors keep their identity behind "op: ". A nil err stays nil.
func Wrap(op string, err error) error {
	switch Classify(err) {
	case Transient:
		return fault.Transient(op, err)
	case Systemic:
		return fault.Systemic(op, err)
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
