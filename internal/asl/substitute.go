package asl

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// placeholderRE matches CDK DefinitionSubstitutions-style ${Name} tokens.
var placeholderRE = regexp.MustCompile(`\$\{([^{}]*)\}`)

// Substitute replaces every ${Name} in def with vars[Name], textually, as
// CloudFormation's Fn::Sub does for DefinitionSubstitutions; ${!Text} is
// Fn::Sub's escape and becomes the literal ${Text}. It fails naming every
// placeholder that has no value.
func Substitute(def []byte, vars map[string]string) ([]byte, error) {
	var missing []string
	out := placeholderRE.ReplaceAllFunc(def, func(m []byte) []byte {
		name := string(m[2 : len(m)-1])
		if literal, ok := strings.CutPrefix(name, "!"); ok {
			return []byte("${" + literal + "}")
		}
		v, ok := vars[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		missing = slices.Compact(missing)
		return nil, fmt.Errorf("asl.Substitute: unresolved placeholders: %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// Placeholders returns the sorted unique names of the ${...} tokens in def,
// leaving out ${!...} escapes.
func Placeholders(def []byte) []string {
	names := []string{}
	for _, m := range placeholderRE.FindAllSubmatch(def, -1) {
		if !strings.HasPrefix(string(m[1]), "!") {
			names = append(names, string(m[1]))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
