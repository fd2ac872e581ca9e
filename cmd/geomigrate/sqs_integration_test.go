//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/localrun"
	"github.com/geomigrate/geomigrate/internal/queue"
	"github.com/geomigrate/geomigrate/internal/queue/sqsqueue"
	"github.com/geomigrate/geomigrate/internal/sampledata"
)

// cliBinary is the geomigrate binary `make test` builds (GEOMIGRATE_CLI).
func cliBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("GEOMIGRATE_CLI")
	if p == "" {
		t.Skip("GEOMIGRATE_CLI not set: run through `make test`, or `make cli` and GEOMIGRATE_CLI=$PWD/bin/geomigrate")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("GEOMIGRATE_CLI=%s: %v (the make target builds it)", p, err)
	}
	return p
}

// moto is the moto_server scripts/integration-up.sh started: one endpoint
// for S3, DynamoDB and SQS.
type moto struct {
	endpoint string
	s3       *s3.Client
	sqs      *sqs.Client
}

func motoServer(t *testing.T) *moto {
	t.Helper()
	ep := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	if ep == "" {
		t.Skip("GEOMIGRATE_MOTO_ENDPOINT not set: run through `make test` (scripts/with-integration-servers.sh)")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	o := awsconfig.Options{EndpointURL: ep, PathStyle: true, Region: "us-east-1", AccessKeyID: "geomigrate-test", SecretAccessKey: "geomigrate-test-secret"}
	cfg, err := awsconfig.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return &moto{endpoint: ep, s3: awsconfig.NewS3(cfg, o), sqs: awsconfig.NewSQS(cfg, o)}
}

func (m *moto) bucket(t *testing.T, name string) {
	t.Helper()
	if _, err := m.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("CreateBucket %s: %v", name, err)
	}
}

func (m *moto) put(t *testing.T, bucket, key string, body []byte) {
	t.Helper()
	if _, err := m.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("PutObject s3://%s/%s: %v", bucket, key, err)
	}
}

func (m *moto) queue(t *testing.T, name string) *sqsqueue.Queue {
	t.Helper()
	out, err := m.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return sqsqueue.New(m.sqs, sqsqueue.Options{QueueURL: aws.ToString(out.QueueUrl)})
}

func depthOf(t *testing.T, q *sqsqueue.Queue) queue.Depth {
	t.Helper()
	d, err := q.Depth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// cliRun runs the binary in dir with test credentials. The environment
// still holds AWS_ENDPOINT_URL_S3/_DYNAMODB for versitygw and dynalite:
// --endpoint-url must win over them.
type cliResult struct {
	stdout, stderr string
	exit           int
	took           time.Duration
}

func cliRun(t *testing.T, bin, dir string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=geomigrate-test", "AWS_SECRET_ACCESS_KEY=geomigrate-test-secret",
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

func outcomeOf(t *testing.T, r cliResult, key string) localrun.Outcome {
	t.Helper()
	stdout := r.stdout
	if !strings.Contains(stdout, "report: ") {
		t.Fatalf("no run report for %s; stdout:\n%s\nstderr:\n%s", key, r.stdout, r.stderr)
	}
	for _, o := range lastReport(t, stdout).Files {
		if o.Key == key {
			return o
		}
	}
	t.Fatalf("no outcome for %s in the report\n%s", key, stdout)
	return localrun.Outcome{}
}

// TestReplayFromSQSAgainstMoto is the replay sequence against one moto
// endpoint: a file with no CRS lands in the remediation queue; once fixed
// in the bucket, replay converts it and the queue is empty. Then: a message
// whose file is still unfixed stays in the queue, and the dead-letter
// message the state machine writes when Classify itself fails replays too.
func TestReplayFromSQSAgainstMoto(t *testing.T) {
	bin := cliBinary(t)
	m := motoServer(t)
	dir := t.TempDir()
	samples, err := sampledata.Write(filepath.Join(dir, "samples"))
	if err != nil {
		t.Fatal(err)
	}
	file := map[string][]byte{}
	for _, s := range samples {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		file[filepath.Base(s.Path)] = b
	}
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	src, dst, table := "src-"+suffix, "dst-"+suffix, "jobs-"+suffix
	m.bucket(t, src)
	m.bucket(t, dst)
	rem, dlq := m.queue(t, "remediation-"+suffix), m.queue(t, "dead-letter-"+suffix)
	m.put(t, src, "in/no_crs.tif", file["no_crs.tif"])

	awsArgs := []string{"--backend", "aws", "--endpoint-url", m.endpoint, "--path-style", "--state-table", table, "--progress", "plain"}
	migrate := func(stateDir string, extra ...string) cliResult {
		args := append([]string{"migrate", "s3://" + src + "/in/", "--dest", "s3://" + dst + "/out", "--state-dir", stateDir,
			"--remediation-queue-url", rem.URL(), "--dlq-url", dlq.URL()}, awsArgs...)
		return cliRun(t, bin, dir, append(args, extra...)...)
	}
	replay := func(stateDir string, args ...string) cliResult {
		// --local: converted in this process (the stand-ins have no Step
		// Functions to start the deployed state machine on).
		return cliRun(t, bin, dir, append(append([]string{"replay", "--local", "--dest", "s3://" + dst + "/out", "--state-dir", stateDir}, awsArgs...), args...)...)
	}

	r := migrate(filepath.Join(dir, "run1"), "--create-table")
	if r.exit != 0 {
		t.Fatalf("migrate exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if o := outcomeOf(t, r, "in/no_crs.tif"); o.Status != localrun.StatusRemediation || o.Code != "MissingCRS" {
		t.Fatalf("no_crs.tif: %+v", o)
	}
	if d := depthOf(t, rem); d != (queue.Depth{Visible: 1}) {
		t.Fatalf("remediation queue %+v after migrate, want one message", d)
	}
	st := cliRun(t, bin, dir, "status", "--backend", "aws", "--endpoint-url", m.endpoint, "--state-table", table,
		"--remediation-queue-url", rem.URL(), "--dlq-url", dlq.URL())
	if st.exit != 0 || !strings.Contains(st.stdout, "queue remediation  1 message(s)") || !strings.Contains(st.stdout, "queue dead-letter  0 message(s)") {
		t.Errorf("status exit %d:\n%s%s", st.exit, st.stdout, st.stderr)
	}

	// Fixed in the bucket: a version with a CRS.
	m.put(t, src, "in/no_crs.tif", file["landcover_4326.tif"])
	r = replay(filepath.Join(dir, "replay1"), "--queue", "remediation", "--remediation-queue-url", rem.URL())
	if r.exit != 0 {
		t.Fatalf("replay exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	o := outcomeOf(t, r, "in/no_crs.tif")
	if o.Status != localrun.StatusCompleted || len(o.Outputs) == 0 {
		t.Fatalf("replayed no_crs.tif: %+v", o)
	}
	if _, err := m.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(dst), Key: aws.String(o.Outputs[0])}); err != nil {
		t.Errorf("output s3://%s/%s: %v", dst, o.Outputs[0], err)
	}
	if d := depthOf(t, rem); d != (queue.Depth{}) {
		t.Errorf("remediation queue %+v after replay, want empty", d)
	}

	// Not fixed: the job is still awaiting remediation, the message stays
	// (visible again at once, not deleted).
	m.put(t, src, "in/still_no_crs.tif", file["no_crs.tif"])
	if r := migrate(filepath.Join(dir, "run2")); r.exit != 0 {
		t.Fatalf("second migrate exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	r = replay(filepath.Join(dir, "replay2"), "--queue", "remediation", "--remediation-queue-url", rem.URL())
	if r.exit != 0 || !strings.Contains(r.stdout, "0 deleted, 1 left") {
		t.Errorf("replay of an unfixed file: exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if d := depthOf(t, rem); d != (queue.Depth{Visible: 1}) {
		t.Errorf("remediation queue %+v after replaying an unfixed file, want its message back", d)
	}

	// The message ClassifyFailed sends: the raw input and error, no
	// RouteMessage.
	m.put(t, src, "late/dem.tif", file["dem_utm33.tif"])
	body := fmt.Sprintf(`{"source":{"bucket":%q,"key":"late/dem.tif","key_encoding":"plain","dataset_id":""},`+
		`"error":{"Error":"Lambda.Unknown","Cause":"runtime exited"},"classify_error":{"Error":"States.Timeout","Cause":""},`+
		`"execution":"arn:aws:states:us-east-1:123456789012:execution:migrate:x"}`, src)
	if _, err := dlq.Send(context.Background(), body); err != nil {
		t.Fatal(err)
	}
	r = replay(filepath.Join(dir, "replay3"), "--queue", "dlq", "--dlq-url", dlq.URL())
	if r.exit != 0 {
		t.Fatalf("dlq replay exit %d\n%s\n%s", r.exit, r.stdout, r.stderr)
	}
	if o := outcomeOf(t, r, "late/dem.tif"); o.Status != localrun.StatusCompleted {
		t.Errorf("replayed ClassifyFailed message: %+v", o)
	}
	if d := depthOf(t, dlq); d != (queue.Depth{}) {
		t.Errorf("dead-letter queue %+v after replay, want empty", d)
	}
}

// TestMisconfigurationFailsFast: before any file, migrate --backend aws
// names what is missing in one line, and an endpoint that does not answer
// is reported within 10 s.
func TestMisconfigurationFailsFast(t *testing.T) {
	bin := cliBinary(t)
	m := motoServer(t)
	dir := t.TempDir()
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	src, dst, table := "msrc-"+suffix, "mdst-"+suffix, "mjobs-"+suffix
	m.bucket(t, src)
	m.bucket(t, dst)
	m.put(t, src, "in/x.tif", []byte("not really a tiff"))
	rem, dlq := m.queue(t, "mrem-"+suffix), m.queue(t, "mdlq-"+suffix)
	// The table, once (an empty prefix: created, then refused as having
	// nothing to migrate).
	if r := cliRun(t, bin, dir, "migrate", "s3://"+src+"/none/", "--backend", "aws", "--endpoint-url", m.endpoint,
		"--dest", "s3://"+dst, "--state-table", table, "--create-table", "--state-dir", filepath.Join(dir, "init")); r.exit != 1 || !strings.Contains(r.stderr, "nothing to migrate") {
		t.Fatalf("create table: exit %d\n%s", r.exit, r.stderr)
	}
	// A server that accepts connections and never answers.
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	args := func(endpoint, srcURI, dest, tbl, remURL, dlqURL string) []string {
		return []string{"migrate", srcURI, "--backend", "aws", "--endpoint-url", endpoint, "--dest", dest, "--state-table", tbl,
			"--remediation-queue-url", remURL, "--dlq-url", dlqURL, "--state-dir", filepath.Join(dir, "st")}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing source bucket", args(m.endpoint, "s3://nosuch-"+suffix+"/in/", "s3://"+dst, table, rem.URL(), dlq.URL()),
			[]string{`bucket "nosuch-` + suffix + `" does not exist`, "aws s3 mb"}},
		{"missing destination bucket", args(m.endpoint, "s3://"+src+"/in/", "s3://nodest-"+suffix+"/out", table, rem.URL(), dlq.URL()),
			[]string{`bucket "nodest-` + suffix + `" does not exist`}},
		{"missing table", args(m.endpoint, "s3://"+src+"/in/", "s3://"+dst, "notable-"+suffix, rem.URL(), dlq.URL()),
			[]string{`DynamoDB table "notable-` + suffix + `" does not exist`, "--create-table"}},
		{"missing queue", args(m.endpoint, "s3://"+src+"/in/", "s3://"+dst, table, rem.URL(), m.endpoint+"/123456789012/noqueue-"+suffix),
			[]string{"noqueue-" + suffix, "(--dlq-url) does not exist", "create-queue"}},
		{"nothing listening", args("http://127.0.0.1:1", "s3://"+src+"/in/", "s3://"+dst, table, rem.URL(), dlq.URL()),
			[]string{"cannot reach S3 at http://127.0.0.1:1", "connection refused"}},
		{"no answer", args("http://"+hole.Addr().String(), "s3://"+src+"/in/", "s3://"+dst, table, rem.URL(), dlq.URL()),
			[]string{"S3 at http://" + hole.Addr().String(), "did not answer within"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := cliRun(t, bin, dir, tc.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.exit != 1 || len(lines) != 1 {
				t.Fatalf("exit %d, %d stderr line(s), want 1 and one line:\n%s%s", r.exit, len(lines), r.stderr, r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("%q does not say %q", lines[0], w)
				}
			}
			if r.took > 10*time.Second {
				t.Errorf("took %s, want under 10 s", r.took)
			}
			t.Logf("%s (%s)", lines[0], r.took.Round(time.Millisecond))
		})
	}
	// Nothing was run, so nothing was dead-lettered.
	if d := depthOf(t, dlq); d != (queue.Depth{}) {
		t.Errorf("dead-letter queue %+v after failed preflights", d)
	}
}
