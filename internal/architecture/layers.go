package architecture

import "strings"

// role is what a package of this module is, for the rule "domain packages
// never import adapters or wiring": the domain declares the ports, adapters
// implement them against AWS or GDAL, wiring (the Lambda mains, the CLI, the
// local runner that drives the real handlers) puts the two together.
type role string

const (
	domain  role = "domain"
	adapter role = "adapter"
	wiring  role = "wiring"
	tests   role = "test"
)

// roles maps module-relative package paths (a trailing "/" means the whole
// subtree) to their role; the longest match wins and anything not listed is
// domain, so a new package starts under the strictest rule.
var roles = []struct {
	path string
	role role
}{
	{"internal/objectstore/s3store", adapter},
	{"internal/statestore/dynamostore", adapter},
	{"internal/queue/sqsqueue", adapter},
	{"internal/awsconfig", adapter},
	{"internal/recipesource", adapter},
	{"internal/policy/ssmpolicy", adapter},
	{"internal/gdal", adapter},
	// The local backends implement the same ports against the file system
	// and an embedded database; the in-memory doubles and the conformance
	// suites beside them (memstore, faultstore, statestoretest, queuetest,
	// objectstoretest) depend on nothing and stay domain.
	{"internal/objectstore/dirstore", adapter},
	{"internal/statestore/boltstore", adapter},
	{"internal/queue/jsonlqueue", adapter},
	{"cmd/", wiring},
	// The AWS composition root: builds the SDK clients, the adapters and
	// the handlers once per cold start for every Lambda main.
	{"internal/awsapp", wiring},
	// Developer tools (document generators, the RSS benchmark driver).
	{"tools/", wiring},
	{"functions", wiring},
	{"functions/", wiring},
	{"internal/localrun", wiring},
	{"test/", tests},
	// Sample events and the tests that drive them through the handlers;
	// demo input files for `geomigrate sample-data` and tests.
	{"events", tests},
	{"internal/sampledata", tests},
	// The local executor's stand-in for the SSM SDK integration, for tests.
	{"internal/policy/ssmpolicy/ssmpolicytest", tests},
	{"internal/architecture", tests},
	// `geomigrate plan`'s decisions and report: GDAL and the stores are
	// ports (plan.Preflighter, plan.Source) the CLI fills.
	{"internal/plan", domain},
}

const modulePath = "github.com/geomigrate/geomigrate"

// roleOf returns the role of a module-relative package path.
func roleOf(rel string) role {
	best, bestLen := domain, -1
	for _, r := range roles {
		match := rel == strings.TrimSuffix(r.path, "/") ||
			(strings.HasSuffix(r.path, "/") && strings.HasPrefix(rel, r.path))
		if match && len(r.path) > bestLen {
			best, bestLen = r.role, len(r.path)
		}
	}
	return best
}

// domainViolations lists the imports of package rel (module-relative) that
// break "domain packages never import adapters or wiring". Imports from
// outside the module are the other rules' business.
func domainViolations(rel string, imports []string) []string {
	if roleOf(rel) != domain {
		return nil
	}
	var bad []string
	for _, imp := range imports {
		dep, ok := strings.CutPrefix(imp, modulePath+"/")
		if !ok {
			continue
		}
		if r := roleOf(dep); r == adapter || r == wiring {
			bad = append(bad, imp+" ("+string(r)+")")
		}
	}
	return bad
}
