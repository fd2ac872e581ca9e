//go:build integration

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/dynamostore"
)

// TestKillNineThenRerunOnAnotherHostAndInAContainer: a --backend aws run
// (S3 and DynamoDB stand-ins) is killed with SIGKILL while it holds a
// file. A rerun "from another host" (its own UTS and PID namespaces, a
// different hostname) finds the lease live (its heartbeat has not lapsed):
// it leaves the file alone, names it with when to retry and exits
// non-zero. Once the heartbeat has lapsed, a rerun as PID 1 of a new PID
// namespace (a restarted container: the dead run's PID means nothing
// there) takes the file over and completes every file, with no
// dead-letter message left behind.
func TestKillNineThenRerunOnAnotherHostAndInAContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare of PID and UTS namespaces needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	bin := cliBinary(t)
	c := s3Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	f := goodRaster(t)
	suffix := fmt.Sprint(time.Now().UnixNano())
	src, dst, table := "tsrc-"+suffix, "tdst-"+suffix, "tstate-"+suffix
	for _, b := range []string{src, dst} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	body, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	const files = 30
	for i := range files {
		// Each copy differs in one trailing byte (a GeoTIFF reader ignores
		// it), so each is its own job.
		b := append(bytes.Clone(body), byte(i))
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(src), Key: aws.String(fmt.Sprintf("in/f%02d.tif", i)), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := awsconfig.Load(ctx, awsconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	state := dynamostore.New(awsconfig.NewDynamoDB(cfg, awsconfig.Options{}), dynamostore.Options{Table: table})
	stateDir := filepath.Join(dir, "state")
	args := func(prefix string) []string {
		return []string{"migrate", "s3://" + src + "/" + prefix, "--backend", "aws", "--dest", "s3://" + dst + "/out",
			"--state-table", table, "--create-table", "--state-dir", stateDir, "--progress", "plain", "--workers", "1", "--heartbeat", "3s"}
	}
	type result struct {
		stdout, stderr string
		exit           int
	}
	runIn := func(wrap []string, a []string) result {
		t.Helper()
		all := append(append(append([]string(nil), wrap...), bin), a...)
		cmd := exec.Command(all[0], all[1:]...)
		cmd.Dir = dir
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			return result{out.String(), errOut.String(), ee.ExitCode()}
		case err != nil:
			t.Fatalf("%v: %v", all, err)
		}
		return result{out.String(), errOut.String(), 0}
	}

	// The first run, killed while a file is PROCESSING under its lease.
	first := exec.Command(bin, args("in/")...)
	first.Dir = dir
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	var held statestore.Job
	deadline := time.Now().Add(3 * time.Minute)
	for held.ID == "" {
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("no job PROCESSING under the first run's lease within 3 minutes:\n%s", firstErr.String())
		}
		_ = state.List(ctx, statestore.Processing, func(j statestore.Job) error {
			if j.Holder != "" && time.Now().Before(j.HeartbeatUntil) {
				held = j
			}
			return nil
		})
	}
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	t.Logf("killed the first run holding %s (%s)", held.SourceKey, held.Holder)

	// From another host, at once: the lease is live.
	other := runIn([]string{"unshare", "--uts", "--pid", "--fork", "--mount-proc", "sh", "-c", `hostname another-host && exec "$0" "$@"`}, args(held.SourceKey))
	if other.exit == 0 {
		t.Fatalf("a rerun on another host while the lease is live exited 0:\n%s\n%s", other.stdout, other.stderr)
	}
	if !strings.Contains(other.stdout, held.SourceKey+": PROCESSING, held by "+held.LeaseOwner) ||
		!strings.Contains(other.stderr, "1 file(s) held by another run were not migrated (listed above): run again after ") {
		t.Fatalf("the refusal does not name %s and when to retry:\n%s\n%s", held.SourceKey, other.stdout, other.stderr)
	}
	rec, err := state.Get(ctx, held.ID)
	if err != nil || rec.Status != statestore.Processing || rec.LeaseOwner != held.LeaseOwner {
		t.Fatalf("the refusing run touched the held job: %+v %v", rec, err)
	}

	// Once the heartbeat has lapsed, PID 1 of a new PID namespace takes it.
	for time.Now().Before(rec.HeartbeatUntil) {
		time.Sleep(time.Until(rec.HeartbeatUntil) + 10*time.Millisecond)
	}
	last := runIn([]string{"unshare", "--pid", "--fork", "--mount-proc"}, args("in/"))
	if last.exit != 0 {
		t.Fatalf("the rerun in a new PID namespace: exit %d\n%s\n%s", last.exit, last.stdout, last.stderr)
	}
	if !strings.Contains(last.stderr, "were held by runs no longer running (its heartbeat lapsed at ") {
		t.Errorf("the take-over is not said:\n%s", last.stderr)
	}
	completed := 0
	if err := state.List(ctx, "", func(j statestore.Job) error {
		if j.Status == statestore.Completed {
			completed++
		} else {
			t.Errorf("%s: %s (%s)", j.SourceKey, j.Status, j.LeaseOwner)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if completed != files {
		t.Errorf("%d of %d files completed", completed, files)
	}
	if dlq, _ := os.ReadFile(filepath.Join(stateDir, "dead-letter.jsonl")); len(dlq) > 0 {
		t.Errorf("dead-letter messages after a take-over that completed every file:\n%s", dlq)
	}
}

// TestLocalKillNineThenRerunInANewPIDNamespace: a local run killed with
// SIGKILL while it holds a file, and a rerun as PID 1 of a new PID
// namespace (a restarted container): the rerun holds the embedded state
// store, so it knows the killed run has ended, takes the file over at once
// and completes every file with no dead-letter message.
func TestLocalKillNineThenRerunInANewPIDNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unshare of a PID namespace needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	bin := cliBinary(t)
	dir := t.TempDir()
	src, dest := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(goodRaster(t))
	if err != nil {
		t.Fatal(err)
	}
	const files = 30
	for i := range files {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d.tif", i)), append(bytes.Clone(body), byte(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"migrate", src, "--dest", dest, "--progress", "plain", "--workers", "1"}
	// Kill a run just after a file ends, until a kill leaves a file
	// PROCESSING (the next one had started); the store is free once the
	// process is gone.
	heldKey := ""
	for round := 0; heldKey == ""; round++ {
		if round == 5 {
			t.Fatal("5 runs killed after a file ended left no file PROCESSING")
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<16)
		var seen strings.Builder
		for !strings.Contains(seen.String(), "] completed ") {
			n, err := stderr.Read(buf)
			seen.Write(buf[:n])
			if err != nil {
				break // the run ended before a file did: nothing left to kill
			}
		}
		time.Sleep(5 * time.Millisecond) // into the next file's steps
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		db, err := boltstore.Open(filepath.Join(dest, stateDirName, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		_ = db.List(context.Background(), statestore.Processing, func(j statestore.Job) error {
			if j.Holder != "" {
				heldKey = j.SourceKey
			}
			return nil
		})
		db.Close()
	}
	t.Logf("killed a run holding %s", heldKey)
	cmd := exec.Command("unshare", append([]string{"--pid", "--fork", "--mount-proc", bin}, args...)...)
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("rerun in a new PID namespace: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "were held by runs no longer running (its run has ended: it no longer holds the state store open); this run takes them over") {
		t.Errorf("the take-over is not said:\n%s", errOut.String())
	}
	r := lastReport(t, out.String())
	for _, o := range r.Files {
		if o.Status != "completed" && !(o.Status == "skipped" && o.Reason == "already_migrated") {
			t.Errorf("%s: %s/%s", o.Key, o.Status, o.Reason)
		}
	}
	if dlq, _ := os.ReadFile(filepath.Join(dest, stateDirName, "dead-letter.jsonl")); len(dlq) > 0 {
		t.Errorf("dead-letter messages after a take-over that completed every file:\n%s", dlq)
	}
}
