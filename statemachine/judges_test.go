package statemachine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/asl"
	"github.com/geomigrate/geomigrate/internal/asljudge"
)

// stand-in values for string placeholders, by the suffix of their name.
func standIn(name string) string {
	switch {
	case strings.HasSuffix(name, "FunctionArn"):
		return "arn:aws:lambda:eu-west-1:123456789012:function:" + name
	case strings.HasSuffix(name, "StateMachineArn"):
		return "arn:aws:states:eu-west-1:123456789012:stateMachine:" + name
	case strings.HasSuffix(name, "QueueUrl"):
		return "https://sqs.eu-west-1.amazonaws.com/123456789012/" + name
	case strings.HasSuffix(name, "Bucket"):
		return strings.ToLower(name)
	case name == ConvertClusterArn:
		return "arn:aws:ecs:eu-west-1:123456789012:cluster/geomigrate"
	case name == ConvertTaskDefinitionArn:
		return "arn:aws:ecs:eu-west-1:123456789012:task-definition/geomigrate-convert:1"
	case name == ConvertSubnetIDs:
		return "subnet-0123456789abcdef0,subnet-0fedcba9876543210"
	case name == ConvertSecurityGroupID:
		return "sg-0123456789abcdef0"
	case name == PolicyParameterName:
		return "/geomigrate/policy"
	}
	return ""
}

// TestDefinitionsPassOutsideJudges runs asl-validator and statelint on every
// definition file in this directory, after the expansion and substitution
// infra and the local executor apply.
func TestDefinitionsPassOutsideJudges(t *testing.T) {
	j, err := asljudge.Find("..")
	if errors.Is(err, asljudge.ErrNotInstalled) && os.Getenv(asljudge.RequireEnv) == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.asl.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no definitions: %v", err)
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var def []byte
			switch file {
			case "migrate.asl.json":
				def, err = ExpandMigrate(raw, DefaultTaskTimeouts)
			case "backfill.asl.json":
				def, err = ExpandBackfill(raw, []string{"incoming/", "legacy/gis/"})
			case "close-map-run.asl.json":
				def = raw // no value placeholders
			default:
				t.Fatalf("%s: add its value placeholders to this test", file)
			}
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			for _, p := range asl.Placeholders(def) {
				if vars[p] = standIn(p); vars[p] == "" {
					t.Fatalf("no stand-in for ${%s}", p)
				}
			}
			if def, err = asl.Substitute(def, vars); err != nil {
				t.Fatal(err)
			}
			v, err := j.Judge(context.Background(), def)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range v.Allowed {
				t.Log(a)
			}
			for _, e := range v.Errors {
				t.Error(e)
			}
		})
	}
}
