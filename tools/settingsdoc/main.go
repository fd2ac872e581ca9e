// Command settingsdoc writes docs/settings.md, the table of every setting
// internal/config declares: go run ./tools/settingsdoc > docs/settings.md
package main

import (
	"fmt"
	"os"

	"github.com/geomigrate/geomigrate/internal/config"
)

func main() {
	if err := config.WriteSettingsDoc(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "settingsdoc:", err)
		os.Exit(1)
	}
}
