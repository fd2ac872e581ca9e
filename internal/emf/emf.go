// Package emf writes CloudWatch Embedded Metric Format documents: one JSON
// object per line on a writer (in Lambda, stdout), which CloudWatch Logs
// turns into metrics without any API call.
//
// A document (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
//
//	{"_aws":{"Timestamp":1764500000000,"CloudWatchMetrics":[{"Namespace":"geomigrate",
//	  "Dimensions":[["State","Tier"]],"Metrics":[{"Name":"Errors","Unit":"Count"}]}]},
//	 "State":"Convert","Tier":"transient","Errors":1}
//
// Every dimension and metric a directive names is a member of the root
// (target members); dimension values are strings, metric values numbers.
// Properties (WithProperty) are extra root members that are searchable in
// Logs Insights but are not dimensions, so they add no metric cardinality.
package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of geomigrate's metrics (the
// handlers write to it; the stack's alarms read from it).
const Namespace = "geomigrate"

// Limits of the specification.
const (
	MaxDimensions = 30  // per dimension set
	MaxNameLength = 255 // namespace, metric and dimension names
)

// Units CloudWatch accepts (the StandardUnit enumeration).
var Units = map[string]bool{
	"Seconds": true, "Microseconds": true, "Milliseconds": true,
	"Bytes": true, "Kilobytes": true, "Megabytes": true, "Gigabytes": true, "Terabytes": true,
	"Bits": true, "Kilobits": true, "Megabits": true, "Gigabits": true, "Terabits": true,
	"Percent": true, "Count": true,
	"Bytes/Second": true, "Kilobytes/Second": true, "Megabytes/Second": true, "Gigabytes/Second": true, "Terabytes/Second": true,
	"Bits/Second": true, "Kilobits/Second": true, "Megabits/Second": true, "Gigabits/Second": true, "Terabits/Second": true,
	"Count/Second": true, "None": true,
}

// Logger writes EMF lines. It is safe for concurrent use; each call writes
// exactly one line with one Write.
type Logger struct {
	mu        sync.Mutex
	w         io.Writer
	namespace string
	now       func() time.Time
	props     map[string]any
	onError   func(error)
}

// Option configures a Logger.
type Option func(*Logger)

// WithClock sets the time source of the Timestamp (tests).
func WithClock(now func() time.Time) Option { return func(l *Logger) { l.now = now } }

// WithProperty adds a root member to every document that is not a
// dimension (for example the function name or version).
func WithProperty(name string, value any) Option {
	return func(l *Logger) { l.props[name] = value }
}

// WithErrorHandler receives documents that could not be written or were
// rejected as invalid (default: dropped; metrics must never fail a handler).
func WithErrorHandler(fn func(error)) Option { return func(l *Logger) { l.onError = fn } }

// New returns a Logger writing documents in namespace to w.
func New(w io.Writer, namespace string, opts ...Option) *Logger {
	l := &Logger{w: w, namespace: namespace, now: time.Now, props: map[string]any{}, onError: func(error) {}}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Count writes one metric with one dimension set made of dims (name, value
// pairs, in order). It implements migration.Metrics. Invalid input is
// reported to the error handler and nothing is written.
func (l *Logger) Count(name string, value float64, unit string, dims ...string) {
	if err := l.Emit(Metric{Name: name, Value: value, Unit: unit}, dims...); err != nil {
		l.onError(err)
	}
}

// Metric is one value.
type Metric struct {
	Name  string
	Value float64
	Unit  string // "" means "None"
}

// Emit writes one document holding metrics under one dimension set.
func (l *Logger) Emit(m Metric, dims ...string) error {
	line, err := l.Marshal([]Metric{m}, dims...)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(line)
	return err
}

// Marshal builds one document (with a trailing newline) without writing it.
func (l *Logger) Marshal(metrics []Metric, dims ...string) ([]byte, error) {
	if err := checkName("namespace", l.namespace); err != nil {
		return nil, err
	}
	if len(dims)%2 != 0 {
		return nil, fmt.Errorf("emf.Marshal: dimensions must be name, value pairs, got %d strings", len(dims))
	}
	if len(dims)/2 > MaxDimensions {
		return nil, fmt.Errorf("emf.Marshal: %d dimensions, at most %d allowed", len(dims)/2, MaxDimensions)
	}
	if len(metrics) == 0 {
		return nil, fmt.Errorf("emf.Marshal: no metrics")
	}
	root := map[string]any{}
	for k, v := range l.props {
		root[k] = v
	}
	names := make([]string, 0, len(dims)/2)
	for i := 0; i < len(dims); i += 2 {
		name, value := dims[i], dims[i+1]
		if err := checkName("dimension", name); err != nil {
			return nil, err
		}
		if _, dup := root[name]; dup {
			return nil, fmt.Errorf("emf.Marshal: dimension %q given twice or collides with a property", name)
		}
		if value == "" {
			value = "none" // CloudWatch rejects empty dimension values
		}
		names = append(names, name)
		root[name] = value
	}
	type def struct {
		Name string `json:"Name"`
		Unit string `json:"Unit,omitempty"`
	}
	defs := make([]def, 0, len(metrics))
	for _, m := range metrics {
		if err := checkName("metric", m.Name); err != nil {
			return nil, err
		}
		if m.Name == "_aws" || contains(names, m.Name) {
			return nil, fmt.Errorf("emf.Marshal: metric name %q collides with a dimension or reserved member", m.Name)
		}
		if _, dup := root[m.Name]; dup {
			return nil, fmt.Errorf("emf.Marshal: metric %q collides with a property or another metric", m.Name)
		}
		unit := m.Unit
		if unit == "" {
			unit = "None"
		}
		if !Units[unit] {
			return nil, fmt.Errorf("emf.Marshal: metric %q: unit %q is not a CloudWatch unit", m.Name, unit)
		}
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
			return nil, fmt.Errorf("emf.Marshal: metric %q: value %v is not a finite number", m.Name, m.Value)
		}
		root[m.Name] = m.Value
		defs = append(defs, def{Name: m.Name, Unit: unit})
	}
	root["_aws"] = map[string]any{
		"Timestamp": l.now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  l.namespace,
			"Dimensions": [][]string{names},
			"Metrics":    defs,
		}},
	}
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("emf.Marshal: %w", err)
	}
	return append(b, '\n'), nil
}

func checkName(what, s string) error {
	if s == "" || len(s) > MaxNameLength {
		return fmt.Errorf("emf.Marshal: %s name %q must be 1 to %d characters", what, s, MaxNameLength)
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
