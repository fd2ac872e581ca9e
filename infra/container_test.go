package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/geomigrate/geomigrate/internal/migration"
	"github.com/geomigrate/geomigrate/statemachine"
)

// TestConvertContainer: the large-object path's task definition is arm64
// Fargate with the minimum ephemeral storage (each run asks for its job's),
// one essential container named as the definition overrides it, with the
// Convert Lambda's settings and its own log group; the migrate definition
// runs it on the stack's cluster, task definition and subnets.
func TestConvertContainer(t *testing.T) {
	b := defaultStack(t)
	_, td := b.one(t, "AWS::ECS::TaskDefinition", "ConvertTaskDefinition")
	checks := map[string]string{
		"RuntimePlatform":         `{"CpuArchitecture":"ARM64","OperatingSystemFamily":"LINUX"}`,
		"EphemeralStorage":        `{"SizeInGiB":21}`,
		"RequiresCompatibilities": `["FARGATE"]`,
		"NetworkMode":             `"awsvpc"`,
		"Cpu":                     `"4096"`,
		"Memory":                  `"16384"`,
	}
	for k, want := range checks {
		if got := js(td[k]); got != want {
			t.Errorf("task definition %s = %s, want %s", k, got, want)
		}
	}
	if !strings.HasPrefix(render(td["TaskRoleArn"]), "<GetAtt:ConvertTaskRole") || !strings.HasPrefix(render(td["ExecutionRoleArn"]), "<GetAtt:ConvertTaskExecutionRole") {
		t.Errorf("roles: task %s, execution %s", render(td["TaskRoleArn"]), render(td["ExecutionRoleArn"]))
	}
	cds := td["ContainerDefinitions"].([]any)
	if len(cds) != 1 {
		t.Fatalf("%d containers, want 1", len(cds))
	}
	cd := cds[0].(map[string]any)
	if cd["Name"] != statemachine.ConvertContainerName || cd["Essential"] != true {
		t.Errorf("container %v essential %v", cd["Name"], cd["Essential"])
	}
	env := map[string]string{}
	for _, e := range cd["Environment"].([]any) {
		m := e.(map[string]any)
		env[m["Name"].(string)] = render(m["Value"])
	}
	for _, k := range []string{"GEOMIGRATE_DEST_BUCKET", "GEOMIGRATE_STATE_TABLE", "GEOMIGRATE_ENGINE_VERSION", "GEOMIGRATE_CONTAINER_BYTES", "GDAL_DATA", "CPL_VSIL_CURL_ALLOWED_EXTENSIONS"} {
		if env[k] == "" {
			t.Errorf("container environment lacks %s: %v", k, env)
		}
	}
	if env["GDAL_CACHEMAX"] != "4096" {
		t.Errorf("GDAL_CACHEMAX %s, want a quarter of the task's memory", env["GDAL_CACHEMAX"])
	}
	if lc := js(cd["LogConfiguration"]); !strings.Contains(lc, `"awslogs"`) || !strings.Contains(lc, "ConvertTaskLogs") {
		t.Errorf("container logs: %s", lc)
	}

	pretty, _ := definition(t, b, "MigrateStateMachine")
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(pretty)); err != nil {
		t.Fatal(err)
	}
	text := compact.String()
	for _, want := range []string{
		`"Resource":"arn:aws:states:::ecs:runTask.sync"`,
		`"Cluster":"<GetAtt:ConvertCluster`,
		`"TaskDefinition":"<Ref:ConvertTaskDefinition`,
		`"SecurityGroups":["<GetAtt:ConvertTaskSecurityGroup`,
		`"Subnets.$":"States.StringSplit('<Ref:ConvertVpcconvertSubnet1`,
		`"EphemeralStorage":{"SizeInGiB.$":"$.ephemeral_gib"}`,
		`"Resource":"arn:aws:states:::aws-sdk:s3:getObject"`,
		migration.ContainerResultPrefix,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("migrate definition lacks %s", want)
		}
	}
}

// TestConvertImageFromRegistry: with convertImage the task runs that image
// and nothing is built.
func TestConvertImageFromRegistry(t *testing.T) {
	const uri = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/geomigrate-convert:3.9.1"
	b := synth(t, map[string]any{"convertImage": uri})
	_, td := b.one(t, "AWS::ECS::TaskDefinition", "ConvertTaskDefinition")
	if img := render(td["ContainerDefinitions"].([]any)[0].(map[string]any)["Image"]); img != uri {
		t.Fatalf("image %s, want %s", img, uri)
	}
}
