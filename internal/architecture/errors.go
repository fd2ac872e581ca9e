package architecture

import (
	"regexp"
	"strconv"
	"strings"
)

// whereWithoutColon matches a string literal that starts with a where
// ("pkg.Func", "pkg.Type.Method", "s3.Put", "gdal.Translate(COG)") followed by a space instead
// of the colon CONTRIBUTING.md asks for: "dirstore.Put b/k: …" must read
// "dirstore.Put: b/k: …" (docs/decisions/0022).
var whereWithoutColon = regexp.MustCompile(`"[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*(\.[A-Z][A-Za-z0-9]*)?(\([A-Za-z0-9]+\))? `)

// wheresWithoutColon returns the lines of src holding such a literal, each as
// "line number: text". Comments are skipped: they quote messages of either
// style when they explain a change.
func wheresWithoutColon(src string) []string {
	var found []string
	for i, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		if whereWithoutColon.MatchString(line) {
			found = append(found, strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
		}
	}
	return found
}
