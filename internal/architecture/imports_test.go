package architecture

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// allowed says which packages may import a restricted dependency: the one
// cgo package for godal, and the sample generator, which writes its demo
// files with GDAL but holds no cgo of its own (and no Lambda links it,
// TestLambdasLinkNoSampleData); adapters and wiring for the AWS SDK and the
// Lambda runtime. Domain packages declare interfaces and import none of them.
var allowed = map[string][]string{
	"github.com/airbusgeo/godal": {"internal/gdal", "internal/sampledata"},
	"github.com/aws/aws-sdk-go-v2": {"internal/awsconfig", "internal/awsapp", "internal/objectstore/s3store", "internal/recipesource", "internal/policy/ssmpolicy/",
		"internal/statestore/dynamostore", "internal/queue/sqsqueue", "functions/", "cmd/", "test/"},
	"github.com/aws/aws-lambda-go": {"internal/awsapp", "functions/", "events", "test/"},
}

type pkg struct {
	ImportPath   string
	Name         string
	Imports      []string
	TestImports  []string
	XTestImports []string
	CgoFiles     []string
}

// importViolations returns one line per broken import rule in pkgs, as
// `go list -json` describes them (tests' imports included).
func importViolations(pkgs []pkg) []string {
	var bad []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, modulePath+"/")
		imports := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		for _, imp := range domainViolations(rel, imports) {
			bad = append(bad, rel+" is a domain package and imports "+imp+"; domain packages never import adapters or wiring")
		}
		bad = append(bad, placeViolations(rel, p)...)
		for _, imp := range imports {
			for dep, who := range allowed {
				if !strings.HasPrefix(imp, dep) {
					continue
				}
				ok := false
				for _, w := range who {
					if rel == strings.TrimSuffix(w, "/") || (strings.HasSuffix(w, "/") && strings.HasPrefix(rel, w)) {
						ok = true
					}
				}
				if !ok {
					bad = append(bad, rel+" imports "+imp+"; only "+strings.Join(who, ", ")+" may")
				}
			}
			if strings.HasPrefix(imp, "github.com/geomigrate/") &&
				(strings.HasSuffix(imp, "/utils") || strings.HasSuffix(imp, "/common") || strings.HasSuffix(imp, "/types")) {
				bad = append(bad, rel+" imports a junk-drawer package "+imp)
			}
		}
	}
	return bad
}

// placeViolations: commands only where commands live, cgo only in
// internal/gdal.
func placeViolations(rel string, p pkg) []string {
	var bad []string
	if p.Name == "main" && !mainAllowed(rel) {
		bad = append(bad, rel+" is a command; commands live under cmd/ (the product), functions/ (the Lambdas) or tools/ (the developer tools), not beside the packages they use")
	}
	if len(p.CgoFiles) > 0 && rel != "internal/gdal" {
		bad = append(bad, rel+" uses cgo; only internal/gdal may")
	}
	return bad
}

// mainAllowed says whether a command may live at rel.
func mainAllowed(rel string) bool {
	for _, dir := range []string{"cmd/", "functions/", "tools/"} {
		if strings.HasPrefix(rel, dir) {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", "-tags", "integration", modulePath+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	domains := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
		if roleOf(strings.TrimPrefix(p.ImportPath, modulePath+"/")) == domain {
			domains++
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list saw %d packages", len(pkgs))
	}
	if domains < 10 {
		t.Fatalf("go list saw %d domain packages; the role table in layers.go has lost its way", domains)
	}
	for _, v := range importViolations(pkgs) {
		t.Error(v)
	}
}

// TestImportViolations feeds the check packages that break each rule, so a
// clean tree means the rules hold, not that the check is blind.
func TestImportViolations(t *testing.T) {
	const m = modulePath + "/"
	pkgs := []pkg{
		{ImportPath: m + "internal/migration", Imports: []string{m + "internal/statestore", "context"},
			TestImports: []string{m + "internal/objectstore/memstore"}},
		{ImportPath: m + "internal/statestore", XTestImports: []string{m + "internal/statestore/boltstore"}},
		{ImportPath: m + "internal/queue", Imports: []string{"github.com/aws/aws-sdk-go-v2/service/sqs"}},
		{ImportPath: m + "internal/validate", CgoFiles: []string{"x.go"}, Imports: []string{"github.com/airbusgeo/godal"}},
		{ImportPath: m + "internal/fault", TestImports: []string{"github.com/aws/aws-lambda-go/lambda"}},
		{ImportPath: m + "internal/formats", Imports: []string{m + "internal/utils"}},
		{ImportPath: m + "internal/gdal", CgoFiles: []string{"gdal.go"}, Imports: []string{"github.com/airbusgeo/godal", m + "internal/convert"}},
		{ImportPath: m + "functions/convert", Imports: []string{m + "internal/gdal", m + "internal/awsapp", "github.com/aws/aws-lambda-go/lambda"}},
		{ImportPath: m + "internal/cost/scaledoc", Name: "main", Imports: []string{m + "internal/cost"}},
		{ImportPath: m + "tools/scaledoc", Name: "main", Imports: []string{m + "internal/cost"}},
	}
	only := func(dep string) string { return "; only " + strings.Join(allowed[dep], ", ") + " may" }
	want := []string{
		"internal/statestore is a domain package and imports " + m + "internal/statestore/boltstore (adapter); domain packages never import adapters or wiring",
		"internal/queue imports github.com/aws/aws-sdk-go-v2/service/sqs" + only("github.com/aws/aws-sdk-go-v2"),
		"internal/validate uses cgo; only internal/gdal may",
		"internal/validate imports github.com/airbusgeo/godal" + only("github.com/airbusgeo/godal"),
		"internal/fault imports github.com/aws/aws-lambda-go/lambda" + only("github.com/aws/aws-lambda-go"),
		"internal/formats imports a junk-drawer package " + m + "internal/utils",
		"internal/cost/scaledoc is a command; commands live under cmd/ (the product), functions/ (the Lambdas) or tools/ (the developer tools), not beside the packages they use",
	}
	if got := importViolations(pkgs); !slices.Equal(got, want) {
		t.Errorf("importViolations:\ngot  %q\nwant %q", got, want)
	}
}
