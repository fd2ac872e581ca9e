// Package lambdatest runs the functions' bootstrap binaries under
// aws-lambda-rie for tests: it builds host-arch bootstraps, starts one rie
// per function on a free 127.0.0.1 port with an explicit environment,
// invokes it over HTTP and stops it by PID. The S3 and DynamoDB endpoints
// come from scripts/with-integration-servers.sh (versitygw, dynalite).
package lambdatest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
)

// Functions are the four Lambda functions (functions/<name>).
var Functions = []string{"hashcheck", "convert", "classify", "promote"}

// InvokePath is rie's invoke endpoint.
const InvokePath = "/2015-03-31/functions/function/invocations"

// RepoRoot finds the module root (the directory holding go.mod) above the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "functions")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("lambdatest.RepoRoot: no go.mod with functions/ above the working directory")
		}
		dir = parent
	}
}

// RIE returns the aws-lambda-rie binary (.tools/bin, then PATH) or skips.
func RIE(t testing.TB) string {
	t.Helper()
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", "aws-lambda-rie")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	t.Skip("aws-lambda-rie not installed: run `make tools-rie` (installs it into .tools/bin), or `make test-lambda`")
	return ""
}

// Servers are the endpoints and credentials of the integration servers.
type Servers struct {
	S3, DynamoDB          string
	AccessKey, SecretKey  string
	Region                string
	s3once, ddbonce       sync.Once
	s3client              *s3.Client
	ddbclient             *dynamodb.Client
	s3options, ddboptions awsconfig.Options
}

// RequireServers returns the servers started by
// scripts/with-integration-servers.sh, or skips.
func RequireServers(t testing.TB) *Servers {
	t.Helper()
	s := &Servers{
		S3:        os.Getenv("AWS_ENDPOINT_URL_S3"),
		DynamoDB:  os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
		AccessKey: envOr("AWS_ACCESS_KEY_ID", "geomigrate-test"),
		SecretKey: envOr("AWS_SECRET_ACCESS_KEY", "geomigrate-test-secret"),
		Region:    envOr("AWS_REGION", "us-east-1"),
	}
	if s.S3 == "" || s.DynamoDB == "" {
		t.Skip("AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL_DYNAMODB not set: run under scripts/with-integration-servers.sh (make test-lambda or make test)")
	}
	return s
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// S3Client is a client for the S3 server (or for endpoint, when given).
func (s *Servers) S3Client(t testing.TB) *s3.Client {
	t.Helper()
	s.s3once.Do(func() {
		s.s3options = awsconfig.Options{S3EndpointURL: s.S3, PathStyle: true, Region: s.Region, AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
		cfg, err := awsconfig.Load(context.Background(), s.s3options)
		if err != nil {
			panic(err)
		}
		s.s3client = awsconfig.NewS3(cfg, s.s3options)
	})
	return s.s3client
}

// DynamoDBClient is a client for the DynamoDB server.
func (s *Servers) DynamoDBClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	s.ddbonce.Do(func() {
		s.ddboptions = awsconfig.Options{DynamoDBEndpointURL: s.DynamoDB, Region: s.Region, AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
		cfg, err := awsconfig.Load(context.Background(), s.ddboptions)
		if err != nil {
			panic(err)
		}
		s.ddbclient = awsconfig.NewDynamoDB(cfg, s.ddboptions)
	})
	return s.ddbclient
}

// CreateBucket creates bucket (an existing one is emptied).
func (s *Servers) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	ctx := context.Background()
	c := s.S3Client(t)
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		if !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") && !strings.Contains(err.Error(), "BucketAlreadyExists") {
			t.Fatalf("create bucket %s: %v", bucket, err)
		}
		s.EmptyBucket(t, bucket)
	}
}

// EmptyBucket deletes every object of bucket.
func (s *Servers) EmptyBucket(t testing.TB, bucket string) {
	t.Helper()
	ctx := context.Background()
	c := s.S3Client(t)
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list %s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: o.Key}); err != nil {
				t.Fatalf("delete %s/%s: %v", bucket, aws.ToString(o.Key), err)
			}
		}
	}
}

// PutObject writes body at bucket/key.
func (s *Servers) PutObject(t testing.TB, bucket, key string, body []byte) {
	t.Helper()
	if _, err := s.S3Client(t).PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

// CreateTable creates a job table (dropped when the test ends) and returns its name.
func (s *Servers) CreateTable(t testing.TB, name string) string {
	t.Helper()
	c := s.DynamoDBClient(t)
	if err := dynamostore.CreateTable(context.Background(), c, name); err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() { _, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name}) })
	return name
}

// Env is the function environment pointing at the servers.
func (s *Servers) Env(destBucket, table string) map[string]string {
	return map[string]string{
		"GEOMIGRATE_DEST_BUCKET":         destBucket,
		"GEOMIGRATE_STATE_TABLE":         table,
		"AWS_ENDPOINT_URL_S3":            s.S3,
		"AWS_ENDPOINT_URL_DYNAMODB":      s.DynamoDB,
		"AWS_EC2_METADATA_DISABLED":      "true",
		"GEOMIGRATE_S3_PATH_STYLE":       "true",
		"GEOMIGRATE_S3_CONDITIONAL_COPY": "probe", // versitygw ignores copy preconditions: probe finds "client"
		"AWS_ACCESS_KEY_ID":              s.AccessKey,
		"AWS_SECRET_ACCESS_KEY":          s.SecretKey,
		"AWS_REGION":                     s.Region,
	}
}

// NativeBootstrap is the host-arch bootstrap of functions/<name> that
// `make build-native` writes to build/native/<name>/bootstrap (deployment
// flags: lambda.norpc, trimmed, stripped; cgo only for convert, against the
// system GDAL). Tests never compile it: when it is missing the test is
// skipped, or fails under make test (GEOMIGRATE_REQUIRE_LAYER) or CI.
func NativeBootstrap(t testing.TB, name string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return RequireBuilt(t, filepath.Join(root, "build", "native", name, "bootstrap"), "make build-native")
}

// RequireBuilt returns path when the make target that builds it has run; it
// skips the test otherwise, or fails it under make test
// (GEOMIGRATE_REQUIRE_LAYER) or CI, where a skipped check would pass unseen.
func RequireBuilt(t testing.TB, path, target string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("%s is not built: run %s first (%v)", path, target, err)
		if os.Getenv("GEOMIGRATE_REQUIRE_LAYER") != "" || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// Function is one bootstrap running under aws-lambda-rie.
type Function struct {
	Name string
	URL  string // http://127.0.0.1:PORT
	// RuntimeAPI is the Runtime API address rie serves the bootstrap on
	// (set by StartInChroot).
	RuntimeAPI string
	Started    time.Time
	cmd        *exec.Cmd
	out        *syncBuffer
	done       chan struct{}
	once       sync.Once
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs bootstrap under rie with exactly env (plus PATH, HOME, TMPDIR)
// and waits until rie listens. The process (and its runtime, which rie
// kills when it gets SIGTERM) is stopped by PID when the test ends.
func Start(t testing.TB, rie, name, bootstrap string, env map[string]string) *Function {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	// The Runtime API (rie ↔ bootstrap) defaults to 127.0.0.1:9001 for
	// every rie: give each its own port so several run at once.
	runtimeAPI := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", runtimeAPI, bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return startRIE(t, name, addr, cmd, 10*time.Second)
}

// StartInChroot runs the arm64 bootstrap in taskDir under rie the way Lambda
// runs it: layers/gdal/lambda-chroot.sh chroots into an empty root holding
// only layer at /opt and taskDir at /var/task (both read-only), with
// Lambda's environment plus env, and starts the bootstrap through
// qemu-user. wrap, when given, prefixes the command (strace). Needs root.
func StartInChroot(t testing.TB, rie, name, taskDir, layer string, env map[string]string, wrap ...string) *Function {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	runtimeAPI := "127.0.0.1:" + strconv.Itoa(FreePort(t))
	args := append([]string{}, wrap...)
	args = append(args, filepath.Join(root, "layers", "gdal", "lambda-chroot.sh"), "--opt", layer, "--task", taskDir, "--rie", rie)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		args = append(args, "-e", k+"="+env[k])
	}
	args = append(args, "--", "--runtime-interface-emulator-address", addr, "--runtime-api-address", runtimeAPI, "/var/task/bootstrap")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	// qemu-user and the chroot's mounts take longer than a native start.
	f := startRIE(t, name, addr, cmd, 30*time.Second)
	f.RuntimeAPI = runtimeAPI
	return f
}

// startRIE starts cmd (rie, or what runs it) and waits up to wait until addr listens.
func startRIE(t testing.TB, name, addr string, cmd *exec.Cmd, wait time.Duration) *Function {
	t.Helper()
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done := make(chan struct{})
	f := &Function{Name: name, URL: "http://" + addr, cmd: cmd, out: buf, Started: time.Now(), done: done}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start rie for %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(f.Stop)
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("rie for %s exited early:\n%s", name, buf.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("rie for %s did not listen on %s:\n%s", name, addr, buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return f
}

// Stop sends SIGTERM to rie (by PID; rie then SIGKILLs its runtime), then
// SIGKILL to the process group it leads if it has not exited after 3 s.
// Start registers it as a cleanup; calling it earlier is fine.
func (f *Function) Stop() {
	f.once.Do(func() {
		pid := f.cmd.Process.Pid
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-f.done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-f.done
		}
	})
}

// Output is what rie and the function wrote so far (logs, EMF lines).
func (f *Function) Output() string { return f.out.String() }

// Response is one invocation's result as rie returns it.
type Response struct {
	Status       int
	Body         []byte
	ErrorType    string // set for a function error
	ErrorMessage string
	Duration     time.Duration
}

// Invoke posts payload and reads the response. A function error comes back
// as HTTP 200 with {"errorMessage","errorType"} (rie sets no
// X-Amz-Function-Error header), so the body decides.
func (f *Function) Invoke(ctx context.Context, payload []byte) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL+InvokePath, bytes.NewReader(payload))
	if err != nil {
		return Response{}, err
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	r := Response{Status: resp.StatusCode, Body: body, Duration: time.Since(start)}
	if err != nil {
		return r, err
	}
	r.ErrorType, r.ErrorMessage = FunctionError(body)
	return r, nil
}

// FunctionError reads a Lambda error document ("" when body is not one).
func FunctionError(body []byte) (errorType, errorMessage string) {
	var e struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage *string `json:"errorMessage"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if dec.Decode(&e) != nil || e.ErrorType == nil || e.ErrorMessage == nil {
		return "", ""
	}
	// A handler output that happens to have these two fields and more is
	// not an error document.
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil && len(m) > 3 {
		return "", ""
	}
	return *e.ErrorType, *e.ErrorMessage
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
