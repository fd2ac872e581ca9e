package architecture

import (
	"regexp"
	"strconv"
	"strings"
)

// outsideCitation matches a reference to a document that is not in the
// repository: the project's source documents by number ("seed 000", "seed
// 001's") or file name ("001_1c841815b7b49454.txt", "shared/seeds/"), and
// issues by number ("issue 9", "issue #3", "issues 8"). The rule such a
// comment followed is stated in place or recorded under docs/decisions/
// (docs/decisions/0001).
var outsideCitation = regexp.MustCompile(`(?i)\bseeds? +#?[0-9]{1,3}\b|\b[0-9]{3}_[0-9a-f]{16}\b|shared/seeds\b|\bissues? +#?[0-9]+\b`)

// citations returns the lines of src that cite an outside document, each as
// "line number: text".
func citations(src string) []string {
	var found []string
	for i, line := range strings.Split(src, "\n") {
		if outsideCitation.MatchString(line) {
			found = append(found, strconv.Itoa(i+1)+": "+strings.TrimSpace(line))
		}
	}
	return found
}
