package config

import (
	"os"
	"testing"
)

// unsetenv removes name for the rest of the test (t.Setenv restores it).
func unsetenv(t *testing.T, name string) {
	t.Helper()
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}
