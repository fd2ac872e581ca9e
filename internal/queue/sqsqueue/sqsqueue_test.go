package sqsqueue_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
)

// fakeSQS records requests and answers with a scripted response.
type fakeSQS struct {
	mu       sync.Mutex
	requests []recorded
	respond  func(w http.ResponseWriter, body map[string]any)
}

type recorded struct {
	method, path, target, contentType, auth string
	body                                    map[string]any
}

func (f *fakeSQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.requests = append(f.requests, recorded{r.Method, r.URL.Path, r.Header.Get("X-Amz-Target"),
		r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body})
	f.mu.Unlock()
	f.respond(w, body)
}

func ok(w http.ResponseWriter, body map[string]any) {
	msg, _ := body["MessageBody"].(string)
	sum := md5.Sum([]byte(msg))
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": "5fea7756-0ea4-451a-a703-a558b933e274", "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}

func failWith(status int, typ, queryError string) func(http.ResponseWriter, map[string]any) {
	return func(w http.ResponseWriter, _ map[string]any) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if queryError != "" {
			w.Header().Set("x-amzn-query-error", queryError)
		}
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": "scripted failure"})
	}
}

func newSender(t *testing.T, f *fakeSQS, queueURL string) *sqsqueue.Queue {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	o := awsconfig.Options{SQSEndpointURL: srv.URL, Region: "eu-west-1", AccessKeyID: "AKID", SecretAccessKey: "secret", MaxBackoff: 1}
	cfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return sqsqueue.New(awsconfig.NewSQS(cfg, o), sqsqueue.Options{QueueURL: queueURL})
}

const queueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/geomigrate-remediation"

func TestSendWire(t *testing.T) {
	f := &fakeSQS{respond: ok}
	s := newSender(t, f, queueURL)
	body := `{"source":"s3://raw/dem tile ü.tif","tier":"data_specific","error":"DataError","cause":"MissingCRS: no CRS"}`
	id, err := s.Send(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	if id != "5fea7756-0ea4-451a-a703-a558b933e274" {
		t.Errorf("id = %q", id)
	}
	if len(f.requests) != 1 {
		t.Fatalf("%d requests, want 1", len(f.requests))
	}
	r := f.requests[0]
	if r.method != http.MethodPost || r.path != "/" {
		t.Errorf("request %s %s, want POST /", r.method, r.path)
	}
	if r.target != "AmazonSQS.SendMessage" {
		t.Errorf("X-Amz-Target = %q, want AmazonSQS.SendMessage", r.target)
	}
	if r.contentType != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type = %q, want the JSON 1.0 protocol", r.contentType)
	}
	if !strings.HasPrefix(r.auth, "AWS4-HMAC-SHA256 Credential=AKID/") || !strings.Contains(r.auth, "/eu-west-1/sqs/aws4_request") {
		t.Errorf("Authorization = %q, want SigV4 for sqs in eu-west-1", r.auth)
	}
	if r.body["QueueUrl"] != queueURL || r.body["MessageBody"] != body {
		t.Errorf("body = %v", r.body)
	}
	if _, ok := r.body["MessageGroupId"]; ok {
		t.Errorf("standard queue got a MessageGroupId: %v", r.body)
	}
}

func TestSendFIFO(t *testing.T) {
	f := &fakeSQS{respond: ok}
	s := newSender(t, f, queueURL+".fifo")
	for range 2 {
		if _, err := s.Send(context.Background(), "same body"); err != nil {
			t.Fatal(err)
		}
	}
	a, b := f.requests[0].body, f.requests[1].body
	if a["MessageGroupId"] != "geomigrate" || a["MessageDeduplicationId"] == "" || a["MessageDeduplicationId"] != b["MessageDeduplicationId"] {
		t.Errorf("FIFO bodies = %v / %v: want a group and a content-based dedup ID", a, b)
	}
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		respond  func(http.ResponseWriter, map[string]any)
		tier     fault.Tier
		attempts int // the SDK retries retryable errors once (DefaultMaxAttempts)
	}{
		{"queue does not exist (query-compatible code)", failWith(400, "com.amazonaws.sqs#QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue;Sender"), fault.TierSystemic, 1},
		{"queue does not exist (JSON type only)", failWith(400, "com.amazonaws.sqs#QueueDoesNotExist", ""), fault.TierSystemic, 1},
		{"access denied", failWith(400, "AccessDeniedException", "AccessDenied;Sender"), fault.TierSystemic, 1},
		{"bad signature", failWith(403, "com.amazon.coral.service#InvalidSignatureException", ""), fault.TierSystemic, 1},
		{"unknown key", failWith(403, "com.amazon.coral.service#UnrecognizedClientException", ""), fault.TierSystemic, 1},
		{"kms denied", failWith(400, "com.amazonaws.sqs#KmsAccessDenied", "KMS.AccessDeniedException;Sender"), fault.TierSystemic, 1},
		{"throttled", failWith(400, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender"), fault.TierTransient, 2},
		{"throttling exception", failWith(400, "ThrottlingException", ""), fault.TierTransient, 2},
		{"internal error", failWith(500, "com.amazonaws.sqs#InternalError", ""), fault.TierTransient, 2},
		{"unavailable", failWith(503, "ServiceUnavailable", ""), fault.TierTransient, 2},
		{"invalid body", failWith(400, "com.amazonaws.sqs#InvalidMessageContents", ""), fault.TierUnknown, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSQS{respond: tc.respond}
			_, err := newSender(t, f, queueURL).Send(context.Background(), "m")
			if err == nil {
				t.Fatal("Send succeeded")
			}
			t.Logf("code %q: %v", awsconfig.ErrorCode(err), err)
			if got := fault.TierOf(err); got != tc.tier {
				t.Errorf("tier = %s, want %s (err %v, code %q)", got, tc.tier, err, awsconfig.ErrorCode(err))
			}
			if len(f.requests) != tc.attempts {
				t.Errorf("%d attempts, want %d", len(f.requests), tc.attempts)
			}
		})
	}
}

func TestSendChecksumMismatch(t *testing.T) {
	f := &fakeSQS{respond: func(w http.ResponseWriter, _ map[string]any) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{"MessageId":"x","MD5OfMessageBody":"00000000000000000000000000000000"}`)
	}}
	if _, err := newSender(t, f, queueURL).Send(context.Background(), "m"); err == nil {
		t.Fatal("a wrong MD5OfMessageBody was accepted")
	}
}

func TestSendWithoutQueueURL(t *testing.T) {
	f := &fakeSQS{respond: ok}
	_, err := newSender(t, f, "").Send(context.Background(), "m")
	if fault.TierOf(err) != fault.TierSystemic || len(f.requests) != 0 {
		t.Errorf("err = %v after %d requests, want systemic without a request", err, len(f.requests))
	}
}

func TestSendConnectionRefused(t *testing.T) {
	o := awsconfig.Options{SQSEndpointURL: "http://127.0.0.1:1", Region: "eu-west-1", AccessKeyID: "AKID", SecretAccessKey: "secret", MaxBackoff: 1}
	cfg, _ := awsconfig.Load(context.Background(), o)
	_, err := sqsqueue.New(awsconfig.NewSQS(cfg, o), sqsqueue.Options{QueueURL: queueURL}).Send(context.Background(), "m")
	if fault.TierOf(err) != fault.TierTransient {
		t.Errorf("connection refused = %v, want transient", err)
	}
}

// TestReceiveWire checks the ReceiveMessage request (batch size, visibility
// rounded up to whole seconds, a short long-poll, the system attributes)
// and how a message becomes a Delivery.
func TestReceiveWire(t *testing.T) {
	const body = `{"replay":{"bucket":"raw","key":"a.tif"}}`
	sum := md5.Sum([]byte(body))
	f := &fakeSQS{respond: func(w http.ResponseWriter, _ map[string]any) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_ = json.NewEncoder(w).Encode(map[string]any{"Messages": []map[string]any{{
			"MessageId": "m-1", "ReceiptHandle": "rh-1", "Body": body, "MD5OfBody": hex.EncodeToString(sum[:]),
			"Attributes": map[string]string{"SentTimestamp": "1764500000123", "ApproximateReceiveCount": "3"},
		}}})
	}}
	q := newSender(t, f, queueURL)
	ds, err := q.Receive(context.Background(), 10, 89500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	r := f.requests[0]
	if r.target != "AmazonSQS.ReceiveMessage" || r.body["MaxNumberOfMessages"] != float64(10) ||
		r.body["VisibilityTimeout"] != float64(90) || r.body["WaitTimeSeconds"] != float64(1) {
		t.Errorf("request %s %v", r.target, r.body)
	}
	if names := fmt.Sprint(r.body["MessageSystemAttributeNames"]); !strings.Contains(names, "SentTimestamp") || !strings.Contains(names, "ApproximateReceiveCount") {
		t.Errorf("system attributes asked for: %s", names)
	}
	want := queue.Delivery{Message: queue.Message{ID: "m-1", Body: body, SentAt: time.UnixMilli(1764500000123).UTC()}, Receipt: "rh-1", ReceiveCount: 3}
	if len(ds) != 1 || ds[0] != want {
		t.Errorf("deliveries %+v, want %+v", ds, want)
	}
	for _, bad := range []int{0, 11} {
		if _, err := q.Receive(context.Background(), bad, time.Second); err == nil {
			t.Errorf("Receive(max %d) accepted", bad)
		}
	}
}

func TestDeleteVisibilityDepthWire(t *testing.T) {
	var depth map[string]string
	f := &fakeSQS{respond: func(w http.ResponseWriter, body map[string]any) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if _, ok := body["AttributeNames"]; ok {
			_ = json.NewEncoder(w).Encode(map[string]any{"Attributes": depth})
			return
		}
		io.WriteString(w, `{}`)
	}}
	q := newSender(t, f, queueURL)
	ctx := context.Background()
	if err := q.Delete(ctx, "rh-1"); err != nil {
		t.Fatal(err)
	}
	if err := q.ChangeVisibility(ctx, "rh-2", 0); err != nil {
		t.Fatal(err)
	}
	depth = map[string]string{"ApproximateNumberOfMessages": "7", "ApproximateNumberOfMessagesNotVisible": "2"}
	d, err := q.Depth(ctx)
	if err != nil || d != (queue.Depth{Visible: 7, InFlight: 2}) {
		t.Errorf("Depth = %+v, %v", d, err)
	}
	depth = map[string]string{"ApproximateNumberOfMessages": "many"}
	if _, err := q.Depth(ctx); err == nil {
		t.Error("a non-numeric depth was accepted")
	}
	for i, want := range []struct{ target, key, value string }{
		{"AmazonSQS.DeleteMessage", "ReceiptHandle", "rh-1"},
		{"AmazonSQS.ChangeMessageVisibility", "ReceiptHandle", "rh-2"},
		{"AmazonSQS.GetQueueAttributes", "QueueUrl", queueURL},
	} {
		r := f.requests[i]
		if r.target != want.target || r.body[want.key] != want.value || r.body["QueueUrl"] != queueURL {
			t.Errorf("request %d: %s %v, want %s with %s=%s", i, r.target, r.body, want.target, want.key, want.value)
		}
	}
	if v, ok := f.requests[1].body["VisibilityTimeout"]; ok && v != float64(0) {
		t.Errorf("ChangeMessageVisibility timeout %v, want 0", v)
	}
}

// TestReceivePollsAgainWhenTheQueueDisagrees: an empty long poll is
// believed only when ApproximateNumberOfMessages says nothing is visible;
// otherwise Receive polls again, a bounded number of times.
func TestReceivePollsAgainWhenTheQueueDisagrees(t *testing.T) {
	const body = `{"replay":{"bucket":"raw","key":"a.tif"}}`
	sum := md5.Sum([]byte(body))
	message := map[string]any{"MessageId": "m-1", "ReceiptHandle": "rh-1", "Body": body, "MD5OfBody": hex.EncodeToString(sum[:])}
	for _, tc := range []struct {
		name         string
		emptyPolls   int    // polls answered empty before the message
		visible      string // ApproximateNumberOfMessages
		wantMessages int
		wantRequests []string
	}{
		{"empty and the queue agrees", 5, "0", 0, []string{"ReceiveMessage", "GetQueueAttributes"}},
		{"a cut-short poll", 1, "1", 1, []string{"ReceiveMessage", "GetQueueAttributes", "ReceiveMessage"}},
		{"bounded", 5, "1", 0, []string{"ReceiveMessage", "GetQueueAttributes", "ReceiveMessage", "GetQueueAttributes", "ReceiveMessage"}},
		{"a message at once", 0, "1", 1, []string{"ReceiveMessage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			polls := 0
			f := &fakeSQS{respond: func(w http.ResponseWriter, b map[string]any) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				if _, ok := b["AttributeNames"]; ok {
					_ = json.NewEncoder(w).Encode(map[string]any{"Attributes": map[string]string{
						"ApproximateNumberOfMessages": tc.visible, "ApproximateNumberOfMessagesNotVisible": "0"}})
					return
				}
				polls++
				if polls <= tc.emptyPolls {
					io.WriteString(w, `{}`)
					return
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"Messages": []map[string]any{message}})
			}}
			ds, err := newSender(t, f, queueURL).Receive(context.Background(), 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != tc.wantMessages {
				t.Errorf("%d messages, want %d", len(ds), tc.wantMessages)
			}
			var got []string
			for _, r := range f.requests {
				got = append(got, strings.TrimPrefix(r.target, "AmazonSQS."))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantRequests) {
				t.Errorf("requests %v, want %v", got, tc.wantRequests)
			}
		})
	}
}
