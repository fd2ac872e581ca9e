// Package sfn cross-checks the migrate state machine on a second States
// Language engine, aws-local-stepfunctions 3.0.0 (Node 22), against the
// project's own executor (internal/asl through internal/localrun). Both
// engines drive the same bootstrap binaries under aws-lambda-rie over the
// same versitygw and dynalite servers; see crosscheck_integration_test.go
// and run.mjs. Install with `make test-sfn-tools`; run with `make
// test-lambda` (or `make test`).
package sfn
