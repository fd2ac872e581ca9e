package awsapp_test

import (
	"os"
	"testing"
)

// TestMain keeps every SDK client these tests build away from the EC2
// instance-metadata address (credentials, region): tests run on machines
// that are not EC2 instances, or are, and must not use their role.
func TestMain(m *testing.M) {
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(m.Run())
}
