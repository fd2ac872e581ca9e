package config

import (
	"os"
	"strings"
	"testing"
)

// TestSettingsDocIsCurrent: docs/settings.md is what WriteSettingsDoc
// writes, so every declared setting is documented with its flag, variable,
// default and help (CONTRIBUTING.md, "Add a setting").
func TestSettingsDocIsCurrent(t *testing.T) {
	var want strings.Builder
	if err := WriteSettingsDoc(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/settings.md")
	if err != nil || string(got) != want.String() {
		t.Fatalf("docs/settings.md is stale (%v): run go run ./tools/settingsdoc > docs/settings.md", err)
	}
	for _, name := range LambdaEnvNames() {
		if !strings.Contains(want.String(), "`"+name+"`") {
			t.Errorf("the settings table lacks %s", name)
		}
	}
}
