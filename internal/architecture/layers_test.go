package architecture

import (
	"slices"
	"testing"
)

func TestDomainViolations(t *testing.T) {
	const m = modulePath + "/"
	tests := []struct {
		name    string
		pkg     string
		imports []string
		want    []string
	}{
		{"domain imports domain", "internal/migration",
			[]string{m + "internal/statestore", m + "internal/fault", "context"}, nil},
		{"domain imports an S3 adapter", "internal/migration",
			[]string{m + "internal/objectstore/s3store"}, []string{m + "internal/objectstore/s3store (adapter)"}},
		{"domain imports the cgo binding", "internal/statestore/statestoretest",
			[]string{m + "internal/gdal"}, []string{m + "internal/gdal (adapter)"}},
		{"domain imports the CLI", "internal/asl",
			[]string{m + "cmd/geomigrate"}, []string{m + "cmd/geomigrate (wiring)"}},
		{"domain imports a Lambda main", "internal/validate",
			[]string{m + "functions/convert", m + "functions/lambdatest"},
			[]string{m + "functions/convert (wiring)", m + "functions/lambdatest (wiring)"}},
		{"plan imports GDAL or the AWS root", "internal/plan",
			[]string{m + "internal/gdal", m + "internal/awsapp", m + "internal/objectstore"},
			[]string{m + "internal/gdal (adapter)", m + "internal/awsapp (wiring)"}},
		{"domain imports the local runner", "internal/recipe",
			[]string{m + "internal/localrun"}, []string{m + "internal/localrun (wiring)"}},
		{"unlisted package is domain", "internal/newthing",
			[]string{m + "internal/awsapp"}, []string{m + "internal/awsapp (wiring)"}},
		{"sibling of an adapter is domain", "internal/objectstore/memstore",
			[]string{m + "internal/awsconfig"}, []string{m + "internal/awsconfig (adapter)"}},
		{"domain imports a local backend", "internal/migration",
			[]string{m + "internal/objectstore/dirstore", m + "internal/statestore/boltstore", m + "internal/queue/jsonlqueue"},
			[]string{m + "internal/objectstore/dirstore (adapter)", m + "internal/statestore/boltstore (adapter)", m + "internal/queue/jsonlqueue (adapter)"}},
		{"test double imports a local backend", "internal/objectstore/memstore",
			[]string{m + "internal/objectstore/dirstore"}, []string{m + "internal/objectstore/dirstore (adapter)"}},
		{"local backend imports its helpers", "internal/queue/jsonlqueue",
			[]string{m + "internal/filelock", m + "internal/queue", m + "internal/fault"}, nil},
		{"adapter imports adapter", "internal/objectstore/s3store",
			[]string{m + "internal/awsconfig"}, nil},
		{"composition root imports adapters", "internal/awsapp",
			[]string{m + "internal/objectstore/s3store", m + "internal/awsconfig"}, nil},
		{"wiring imports adapters", "cmd/geomigrate",
			[]string{m + "internal/gdal", m + "internal/awsapp"}, nil},
		{"local runner uses GDAL", "internal/localrun", []string{m + "internal/gdal"}, nil},
		{"tests import wiring", "test/sfn", []string{m + "functions/lambdatest"}, nil},
		{"prefix is not a path match", "internal/gdalish",
			[]string{m + "internal/gdalx"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := domainViolations(tt.pkg, tt.imports)
			if !slices.Equal(got, tt.want) {
				t.Errorf("domainViolations(%q) = %q, want %q", tt.pkg, got, tt.want)
			}
		})
	}
}

func TestRoleOf(t *testing.T) {
	tests := []struct {
		pkg  string
		want role
	}{
		{"internal/gdal", adapter},
		{"internal/preflight", domain},
		{"internal/plan", domain},
		{"internal/budget", domain},
		{"internal/statestore/dynamostore", adapter},
		{"internal/statestore", domain},
		{"internal/statestore/boltstore", adapter},
		{"internal/statestore/statestoretest", domain},
		{"internal/objectstore/dirstore", adapter},
		{"internal/objectstore/memstore", domain},
		{"internal/queue/jsonlqueue", adapter},
		{"internal/filelock", domain},
		{"functions", wiring},
		{"functions/hashcheck", wiring},
		{"cmd/geomigrate", wiring},
		{"internal/awsapp", wiring},
		{"tools/scaledoc", wiring},
		{"statemachine", domain},
		{"events", tests},
		{"internal/sampledata", tests},
		{"test/sfn", tests},
	}
	for _, tt := range tests {
		if got := roleOf(tt.pkg); got != tt.want {
			t.Errorf("roleOf(%q) = %s, want %s", tt.pkg, got, tt.want)
		}
	}
}
