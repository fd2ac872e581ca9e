package architecture

import (
	"encoding/json"
	"io"
	"os/exec"
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
	"github.com/aws/aws-sdk-go-v2": {"internal/awsconfig", "internal/awsapp", "internal/objectstore/s3store", "internal/recipesource",
		"internal/statestore/dynamostore", "internal/queue/sqsqueue", "functions/", "cmd/", "test/"},
	"github.com/aws/aws-lambda-go": {"internal/awsapp", "functions/", "events", "test/"},
}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	CgoFiles     []string
}

func TestImportRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", "-tags", "integration", "github.com/geomigrate/geomigrate/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen, domains := 0, 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		rel := strings.TrimPrefix(p.ImportPath, "github.com/geomigrate/geomigrate/")
		if roleOf(rel) == domain {
			domains++
		}
		for _, bad := range domainViolations(rel, append(append(p.Imports, p.TestImports...), p.XTestImports...)) {
			t.Errorf("%s is a domain package and imports %s; domain packages never import adapters or wiring", rel, bad)
		}
		if len(p.CgoFiles) > 0 && rel != "internal/gdal" {
			t.Errorf("%s uses cgo; only internal/gdal may", rel)
		}
		for _, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
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
					t.Errorf("%s imports %s; only %v may", rel, imp, who)
				}
			}
			if strings.HasSuffix(imp, "/utils") || strings.HasSuffix(imp, "/common") || strings.HasSuffix(imp, "/types") {
				if strings.HasPrefix(imp, "github.com/geomigrate/") {
					t.Errorf("%s imports a junk-drawer package %s", rel, imp)
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list saw %d packages", seen)
	}
	if domains < 10 {
		t.Fatalf("go list saw %d domain packages; the role table in layers.go has lost its way", domains)
	}
}
