package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/statestore/boltstore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// A truncated state.db: status fails with an error naming the repair
// command (no panic); the repair command makes status work again.
func TestStateRepairAfterTruncation(t *testing.T) {
	dest := t.TempDir()
	paths := pathsFor(dest, "")
	db, err := boltstore.Open(paths.db)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		j := statestoretest.FullJob(fmt.Sprintf("job-%03d", i))
		j.ErrorCause = strings.Repeat("x", 2000)
		if err := db.Put(context.Background(), j, 0); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	fi, _ := os.Stat(paths.db)
	if err := os.Truncate(paths.db, fi.Size()/3); err != nil {
		t.Fatal(err)
	}

	_, _, err = run(t, "status", "--dest", dest)
	if err == nil || !errors.Is(err, boltstore.ErrCorrupt) || !strings.Contains(err.Error(), "geomigrate state repair --state-dir "+paths.dir) {
		t.Fatalf("status on a truncated store: %v", err)
	}
	out, _, err := run(t, "state", "repair", "--dest", dest)
	if err != nil || !strings.Contains(out, "job(s) kept") {
		t.Fatalf("state repair: %v\n%s", err, out)
	}
	backups, _ := filepath.Glob(paths.db + ".damaged-*")
	if len(backups) != 1 {
		t.Errorf("damaged file not kept aside: %v", backups)
	}
	if _, _, err := run(t, "status", "--dest", dest); err != nil {
		t.Errorf("status after repair: %v", err)
	}
	if _, _, err := run(t, "state", "fix"); err == nil {
		t.Error("state fix succeeded")
	}
}
