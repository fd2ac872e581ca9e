package awsconfig

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/fault"
)

// TestEndpointsFromTheSDKEnvironment: the SDK's AWS_ENDPOINT_URL_<SERVICE>
// and AWS_ENDPOINT_URL are honoured (path style follows a custom S3
// endpoint), and an endpoint in Options (the --endpoint-url flag) wins.
func TestEndpointsFromTheSDKEnvironment(t *testing.T) {
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:7")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "http://127.0.0.1:11")
	for _, tc := range []struct {
		name         string
		o            Options
		s3, ddb, sqs string
		pathStyle    bool
	}{
		{"environment", Options{}, "http://127.0.0.1:9", "http://127.0.0.1:7", "http://127.0.0.1:11", true},
		{"flag wins", Options{EndpointURL: "http://127.0.0.1:8/"}, "http://127.0.0.1:8", "http://127.0.0.1:8", "http://127.0.0.1:8", true},
		{"per-service option", Options{DynamoDBEndpointURL: "http://127.0.0.1:5"}, "http://127.0.0.1:9", "http://127.0.0.1:5", "http://127.0.0.1:11", true},
		{"virtual hosted forced", Options{VirtualHostedStyle: true}, "http://127.0.0.1:9", "http://127.0.0.1:7", "http://127.0.0.1:11", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.AccessKeyID, tc.o.SecretAccessKey = "k", "s"
			cfg, err := Load(context.Background(), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			c := NewS3(cfg, tc.o)
			if got := S3Endpoint(c); got != tc.s3 {
				t.Errorf("S3 endpoint %q, want %q", got, tc.s3)
			}
			if got := c.Options().UsePathStyle; got != tc.pathStyle {
				t.Errorf("path style %v, want %v", got, tc.pathStyle)
			}
			if got := DynamoDBEndpoint(NewDynamoDB(cfg, tc.o)); got != tc.ddb {
				t.Errorf("DynamoDB endpoint %q, want %q", got, tc.ddb)
			}
			if got := SQSEndpoint(NewSQS(cfg, tc.o)); got != tc.sqs {
				t.Errorf("SQS endpoint %q, want %q", got, tc.sqs)
			}
		})
	}
}

func TestRetryer(t *testing.T) {
	if n := (Options{}).NewRetryer().MaxAttempts(); n != DefaultMaxAttempts {
		t.Errorf("default attempts = %d", n)
	}
	if n := (Options{MaxAttempts: 1}).NewRetryer().MaxAttempts(); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

// TestClientsUseEndpointsAndAttempts sends real requests to an httptest
// server that always answers 503: each client must hit its own endpoint,
// path-style for S3, exactly MaxAttempts times, and map to transient.
func TestClientsUseEndpointsAndAttempts(t *testing.T) {
	var s3Hits, ddbHits atomic.Int32
	var s3Path atomic.Value
	s3srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s3Hits.Add(1)
		s3Path.Store(r.URL.Path)
		w.WriteHeader(503)
	}))
	defer s3srv.Close()
	ddbsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ddbHits.Add(1)
		w.WriteHeader(503)
	}))
	defer ddbsrv.Close()
	o := Options{S3EndpointURL: s3srv.URL + "/", DynamoDBEndpointURL: ddbsrv.URL, PathStyle: true,
		AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 3, MaxBackoff: time.Millisecond}
	cfg, err := Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != DefaultRegion {
		t.Errorf("region = %q", cfg.Region)
	}
	_, err = NewS3(cfg, o).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("a/b.tif")})
	if got := s3Hits.Load(); got != 3 {
		t.Errorf("S3 attempts = %d, want 3", got)
	}
	if p, _ := s3Path.Load().(string); p != "/bkt/a/b.tif" {
		t.Errorf("S3 path = %q, want path-style /bkt/a/b.tif", p)
	}
	if fault.TierOf(Wrap("op", err)) != fault.TierTransient {
		t.Errorf("503 = %v, want transient", err)
	}
	_, err = NewDynamoDB(cfg, o).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}})
	if got := ddbHits.Load(); got != 3 {
		t.Errorf("DynamoDB attempts = %d, want 3 (err %v)", got, err)
	}
}

func TestClassify(t *testing.T) {
	if Classify(nil) != Unclassified || Wrap("op", nil) != nil {
		t.Error("nil")
	}
	if Classify(context.DeadlineExceeded) != Transient {
		t.Error("deadline")
	}
	if Classify(context.Canceled) != Canceled {
		t.Error("canceled")
	}
	plain := errors.New("boom")
	w := Wrap("op", plain)
	if !errors.Is(w, plain) || !strings.HasPrefix(w.Error(), "op: ") || fault.TierOf(w) != fault.TierUnknown {
		t.Errorf("Wrap(plain) = %v", w)
	}
}
