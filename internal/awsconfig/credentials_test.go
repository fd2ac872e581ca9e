package awsconfig

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// noCredentials is a workstation with no AWS credentials anywhere the
// SDK looks: no variables, no shared files, no instance metadata.
func noCredentials(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, v := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(v, "")
	}
}

// TestMissingCredentialsSayWhatToDo: a workstation without credentials, or
// naming a profile that does not exist, gets one line with the next step
// instead of the SDK's provider chain; credentials that exist are used.
func TestMissingCredentialsSayWhatToDo(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		o       Options
		atLoad  bool   // refused by Load, not at the first request
		want    string // in the message; "" when credentials are found
		notWant string
	}{
		{name: "none anywhere", want: `run "aws configure"`, notWant: "IMDS"},
		{name: "unknown profile", env: map[string]string{"AWS_PROFILE": "nosuch"}, atLoad: true, want: `AWS profile "nosuch" (AWS_PROFILE) is in neither`},
		{name: "keys in the environment", env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}},
		{name: "keys in Options", o: Options{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noCredentials(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tt.o.Region = "us-east-1"
			cfg, err := Load(context.Background(), tt.o)
			if !tt.atLoad && err == nil {
				_, err = cfg.Credentials.Retrieve(context.Background())
			} else if !tt.atLoad {
				t.Fatalf("Load: %v", err)
			}
			var ce *CredentialsError
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("credentials exist, got %v", err)
			case tt.want == "":
				return
			case !errors.As(err, &ce):
				t.Fatalf("got %v (%T), want a CredentialsError", err, err)
			}
			msg := ce.Error()
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") || (tt.notWant != "" && strings.Contains(msg, tt.notWant)) {
				t.Errorf("message %q: want one line with %q, without %q", msg, tt.want, tt.notWant)
			}
		})
	}
}

// A request that fails for want of credentials carries the
// CredentialsError, so the CLI can print it alone; nothing is sent.
func TestRequestWithoutCredentialsCarriesTheHint(t *testing.T) {
	noCredentials(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request without credentials was sent: %s %s", r.Method, r.URL)
	}))
	defer srv.Close()
	o := Options{EndpointURL: srv.URL, Region: "us-east-1"}
	cfg, err := Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewS3(cfg, o).HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String("bucket")})
	var ce *CredentialsError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a CredentialsError inside", err)
	}
}
