//go:build integration

package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/hostile"
	"github.com/geomigrate/geomigrate/internal/localrun"
)

// hostileMemoryLimit is Lambda's memory as a process limit: a run over
// hostile inputs must fit in it.
const hostileMemoryLimit = 3 << 30

// TestHostileInputsUnderAMemoryLimit: the built CLI,
// limited to a 3 GiB address space as a Lambda function is to its memory,
// migrates a directory of hostile inputs (the deliberately bad samples and
// the size bombs of internal/hostile). The process is never killed, every
// input ends in one terminal state, and no data problem reaches the
// dead-letter queue: each bad file is a DataError in the remediation queue.
func TestHostileInputsUnderAMemoryLimit(t *testing.T) {
	cli := cliBinary(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to limit the run's memory: %v", err)
	}
	src, dest := t.TempDir(), t.TempDir()
	if out, err := exec.Command(cli, "sample-data", src).CombinedOutput(); err != nil {
		t.Fatalf("sample-data: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(src, "bombs"), 0o755); err != nil {
		t.Fatal(err)
	}
	bombs := map[string]bool{}
	for _, b := range hostile.SizeBombs() {
		if err := os.WriteFile(filepath.Join(src, "bombs", b.Name), b.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		bombs["bombs/"+b.Name] = true
	}
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(prlimit, "--as="+strconv.Itoa(hostileMemoryLimit), "--",
		cli, "migrate", src, "--dest", dest, "--workers", "2", "--progress", "plain", "--report", report)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		t.Fatalf("the run was killed (%v) under a %d-byte limit:\n%s", exit, hostileMemoryLimit, out)
	}
	if err != nil {
		t.Errorf("migrate: %v (exit status 1 means a file went to the dead-letter queue or failed)\n%s", err, out)
	}

	b, rerr := os.ReadFile(report)
	if rerr != nil {
		t.Fatalf("no report: %v\n%s", rerr, out)
	}
	var r localrun.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	seen, bombSeen := map[string]int{}, map[string]int{}
	for _, f := range r.Files {
		seen[f.Key]++
		if i := strings.Index(f.Key, "bombs/"); i >= 0 {
			f.Key = f.Key[i:] // whatever prefix a source root gives it
			bombSeen[f.Key]++
		}
		switch {
		case f.Status == localrun.StatusDeadLetter || f.Status == localrun.StatusFailed:
			t.Errorf("%s: %s (%s %s): a hostile input must be a data problem, not a system one", f.Key, f.Status, f.Error, f.Message)
		case bombs[f.Key] && (f.Status != localrun.StatusRemediation || f.Code != "BudgetExceeded"):
			t.Errorf("%s: %s %s, want remediation with BudgetExceeded", f.Key, f.Status, f.Code)
		}
	}
	for key, n := range seen {
		if n != 1 {
			t.Errorf("%s is in the report %d times", key, n)
		}
	}
	for key := range bombs {
		if bombSeen[key] != 1 {
			t.Errorf("%s is missing from the report", key)
		}
	}
	if r.Totals.DeadLetter != 0 || r.Totals.Failed != 0 || r.Totals.Remediation < len(bombs) {
		t.Errorf("totals %+v: want no dead-letter or failed file and every bomb in remediation", r.Totals)
	}
	dlq, _ := os.ReadFile(filepath.Join(dest, stateDirName, "dead-letter.jsonl"))
	if strings.TrimSpace(string(dlq)) != "" {
		t.Errorf("dead-letter queue is not empty:\n%s", dlq)
	}
	if t.Failed() {
		t.Logf("run output:\n%s", out)
	}
}
