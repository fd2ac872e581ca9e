package asl

import "fmt"

// MaxPayloadBytes is Step Functions' payload quota: 256 KiB of UTF-8 per
// execution input, state input and output, task parameters and task
// result (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html;
// each history event's input/output field has a maximum length of 262144,
// "expressed as bytes in UTF-8 encoding"). Over it a state fails with
// States.DataLimitExceeded, which no Retry or Catch handles
// (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html).
// docs/decisions/0101 says what is measured where.
const MaxPayloadBytes = 262144

// overDataLimit is the States.DataLimitExceeded failure of a payload of
// encoded (compact JSON, UTF-8) whose size is over MaxPayloadBytes, nil
// otherwise. what says which payload it is ("the input of state X").
func overDataLimit(encoded []byte, what string) *failure {
	if len(encoded) <= MaxPayloadBytes {
		return nil
	}
	return &failure{Error: ErrDataLimitExceeded, Cause: fmt.Sprintf("%s is %d bytes, over the maximum number of bytes service limit (%d)", what, len(encoded), MaxPayloadBytes)}
}
