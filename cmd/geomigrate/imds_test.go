package main

import (
	"os"
	"testing"
)

// TestMain keeps every SDK client these tests build away from the EC2
// instance-metadata address (credentials, region): tests run on machines
// that are not EC2 instances, or are, and must not use their role. The
// tables fit $COLUMNS (termtable.Width): a developer's exported COLUMNS
// must not reshape the output tests compare; those that fit a width set it.
func TestMain(m *testing.M) {
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Unsetenv("COLUMNS")
	os.Exit(m.Run())
}
