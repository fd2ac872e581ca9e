// Package asl is a local executor of the Amazon States Language (AWS Step
// Functions, JSONPath query language). It parses a definition strictly,
// runs it with in-process handlers standing in for Lambda functions, SQS and
// other service integrations, and records an execution history shaped like
// the one Step Functions keeps.
//
// The goal is fidelity with AWS for the features a pipeline definition uses:
// input/output processing, intrinsic functions, the context object, Retry
// (with MaxDelaySeconds and JitterStrategy), Catch, Parallel, inline and
// distributed Map, and execution timeouts. Time goes through a Clock so that
// tests can run retries and waits instantly with a FakeClock.
package asl
