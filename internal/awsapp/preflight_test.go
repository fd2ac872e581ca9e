package awsapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/awsapp"
	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/migration"
)

// fakeAWS answers HeadBucket, DescribeTable and GetQueueAttributes: bucket
// "good", table "jobs" and queue URLs without "missing" exist.
func fakeAWS(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch target := r.Header.Get("X-Amz-Target"); {
	case r.Method == http.MethodHead && r.URL.Path == "/good":
	case r.Method == http.MethodHead:
		w.WriteHeader(http.StatusNotFound)
	case target == "DynamoDB_20120810.DescribeTable" && in["TableName"] == "jobs":
		io.WriteString(w, `{"Table":{"TableName":"jobs","TableStatus":"ACTIVE"}}`)
	case target == "DynamoDB_20120810.DescribeTable":
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`)
	case target == "AmazonSQS.GetQueueAttributes" && strings.Contains(in["QueueUrl"].(string), "missing"):
		w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`)
	case target == "AmazonSQS.GetQueueAttributes":
		io.WriteString(w, `{"Attributes":{"ApproximateNumberOfMessages":"2","ApproximateNumberOfMessagesNotVisible":"0"}}`)
	default:
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path+" "+target, http.StatusTeapot)
	}
}

func appAt(t *testing.T, endpoint string) *awsapp.App {
	t.Helper()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	app, err := awsapp.New(context.Background(), migration.Config{DestBucket: "good"},
		config.AWS{StateTable: "jobs", ConditionalCopy: "server", MaxBackoff: time.Millisecond},
		awsapp.WithAWSOptions(func(o *awsconfig.Options) {
			o.EndpointURL, o.AccessKeyID, o.SecretAccessKey = endpoint, "k", "s"
		}))
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func TestPreflight(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeAWS))
	defer srv.Close()
	app := appAt(t, srv.URL)
	queues := func(urls ...string) []awsapp.QueueRef {
		var qs []awsapp.QueueRef
		for _, u := range urls {
			qs = append(qs, awsapp.QueueRef{Flag: "--dlq-url", URL: u})
		}
		return qs
	}
	for _, tc := range []struct {
		name string
		r    awsapp.Resources
		want string // "" means no error
	}{
		{"all there", awsapp.Resources{Buckets: []string{"good", "good"}, Table: "jobs", Queues: queues(srv.URL + "/1/q")}, ""},
		{"missing bucket", awsapp.Resources{Buckets: []string{"good", "gone"}, Table: "jobs"}, `bucket "gone" does not exist at ` + srv.URL},
		{"missing table", awsapp.Resources{Buckets: []string{"good"}, Table: "other"}, `DynamoDB table "other" does not exist`},
		{"missing table to be created", awsapp.Resources{Table: "other", CreateTable: true}, ""},
		{"missing queue", awsapp.Resources{Table: "jobs", Queues: queues(srv.URL + "/1/missing")}, "SQS queue " + srv.URL + "/1/missing (--dlq-url) does not exist"},
		{"no queue URL", awsapp.Resources{Queues: queues("")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := app.Preflight(context.Background(), tc.r)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Preflight: %v", err)
				}
				return
			}
			var pe *awsapp.PreflightError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Preflight = %v, want one line saying %q", err, tc.want)
			}
		})
	}
}

// TestPreflightBoundsASilentEndpoint: a server that accepts connections
// and never answers is reported when the preflight timeout passes.
func TestPreflightBoundsASilentEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	app := appAt(t, "http://"+ln.Addr().String())
	err = app.Preflight(context.Background(), awsapp.Resources{Buckets: []string{"good"}, Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Fatalf("Preflight = %v", err)
	}
}

// TestPreflightRetriesTransientAnswers: a start-up check answered 503 or
// reset is tried again (StartupRetry); an answer that a retry cannot
// change (404) is not, and a store failing every try is reported after
// StartupAttempts of them.
func TestPreflightRetriesTransientAnswers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failFirst int    // requests answered with the fault before fakeAWS answers
		fault     string // "503" or "reset"
		bucket    string
		wantTries int
		wantErr   string
	}{
		{"two 503s then an answer", 2, "503", "good", 3, ""},
		{"a reset then an answer", 1, "reset", "good", 2, ""},
		{"503 on every try", 100, "503", "good", awsapp.StartupAttempts, "cannot use S3"},
		{"404 is not retried", 0, "", "gone", 1, `bucket "gone" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			tries := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				tries++
				n := tries
				mu.Unlock()
				switch {
				case n > tc.failFirst:
					fakeAWS(w, r)
				case tc.fault == "reset":
					conn, _, err := http.NewResponseController(w).Hijack()
					if err != nil {
						panic(http.ErrAbortHandler)
					}
					if tcp, ok := conn.(*net.TCPConn); ok {
						_ = tcp.SetLinger(0)
					}
					conn.Close()
				default:
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			defer srv.Close()
			app := appAt(t, srv.URL)
			err := app.Preflight(context.Background(), awsapp.Resources{Buckets: []string{tc.bucket}, Timeout: time.Minute})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Preflight: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Preflight = %v, want %q", err, tc.wantErr)
			}
			if tries != tc.wantTries {
				t.Errorf("%d HeadBucket requests, want %d", tries, tc.wantTries)
			}
		})
	}
}
