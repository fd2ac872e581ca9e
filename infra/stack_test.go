package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/geomigrate/geomigrate/internal/config"
	"github.com/geomigrate/geomigrate/internal/emf"
	"github.com/geomigrate/geomigrate/internal/policy"
	"github.com/geomigrate/geomigrate/statemachine"
)

func TestEveryResourceIsThere(t *testing.T) {
	b := defaultStack(t)
	want := map[string]int{
		"AWS::S3::Bucket":                  4, // source, destination, ops (backfill results, inventory), access logs
		"AWS::DynamoDB::Table":             1,
		"AWS::SQS::Queue":                  5, // remediation + its DLQ, dead letter + its DLQ, EventBridge target DLQ
		"AWS::Lambda::Function":            6, // our 5 + CDK's bucket-notifications handler
		"AWS::Lambda::LayerVersion":        1,
		"AWS::StepFunctions::StateMachine": 2,
		"AWS::Events::Rule":                2, // Object Created → migrate; migrate execution ended → executionfailed
		"AWS::SNS::Topic":                  1,
		"AWS::CloudWatch::Dashboard":       1,
		"Custom::S3BucketNotifications":    1,
		"AWS::SSM::Parameter":              1, // the run-time policy document
		// The large-object path: a VPC of public subnets, the cluster, the arm64 task definition.
		"AWS::EC2::VPC":            1,
		"AWS::ECS::Cluster":        1,
		"AWS::ECS::TaskDefinition": 1,
	}
	for typ, n := range want {
		must(t, typ, func() { b.template.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n))) })
	}
	for _, p := range []string{"HashcheckFunction", "ConvertFunction", "ClassifyFunction", "PromoteFunction", "ExecutionfailedFunction"} {
		b.one(t, "AWS::Lambda::Function", p)
	}
}

func TestBuckets(t *testing.T) {
	b := defaultStack(t)
	for id, r := range b.resources("AWS::S3::Bucket") {
		p := r["Properties"].(map[string]any)
		if js(p["PublicAccessBlockConfiguration"]) != `{"BlockPublicAcls":true,"BlockPublicPolicy":true,"IgnorePublicAcls":true,"RestrictPublicBuckets":true}` {
			t.Errorf("%s: public access not fully blocked: %s", id, js(p["PublicAccessBlockConfiguration"]))
		}
		if !strings.Contains(js(p["BucketEncryption"]), `"SSEAlgorithm":"AES256"`) {
			t.Errorf("%s: no default encryption", id)
		}
		if !strings.Contains(js(p["LifecycleConfiguration"]), `"AbortIncompleteMultipartUpload"`) {
			t.Errorf("%s: no abort-incomplete-multipart lifecycle rule", id)
		}
		if r["DeletionPolicy"] != "Retain" {
			t.Errorf("%s: DeletionPolicy %v, want Retain", id, r["DeletionPolicy"])
		}
	}
	// TLS only: every bucket has a policy denying aws:SecureTransport=false.
	for id, r := range b.resources("AWS::S3::BucketPolicy") {
		doc := js(r["Properties"].(map[string]any)["PolicyDocument"])
		if !strings.Contains(doc, `"aws:SecureTransport":"false"`) || !strings.Contains(doc, `"Effect":"Deny"`) {
			t.Errorf("%s: no TLS-only deny", id)
		}
	}
	if n := len(b.resources("AWS::S3::BucketPolicy")); n != 4 {
		t.Errorf("want a TLS-only policy on all 4 buckets, got %d", n)
	}

	_, dst := b.one(t, "AWS::S3::Bucket", "DestinationBucket")
	if js(dst["VersioningConfiguration"]) != `{"Status":"Enabled"}` {
		t.Errorf("destination versioning: %s", js(dst["VersioningConfiguration"]))
	}
	lc := js(dst["LifecycleConfiguration"])
	if !regexp.MustCompile(`"ExpirationInDays":\d+,"Id":"expire-staging".*"Prefix":"_staging/"`).MatchString(lc) {
		t.Errorf("destination: staging objects do not expire: %s", lc)
	}
	if _, ok := dst["NotificationConfiguration"]; ok {
		t.Error("destination bucket must not send notifications")
	}
	_, src := b.one(t, "AWS::S3::Bucket", "SourceBucket")
	if !strings.Contains(js(src["InventoryConfigurations"]), `"Prefix":"inventory"`) {
		t.Errorf("source: no S3 Inventory for backfills: %s", js(src["InventoryConfigurations"]))
	}
	// Current versions only: no non-current versions or delete markers as
	// backfill items.
	if inv := js(src["InventoryConfigurations"]); !strings.Contains(inv, `"IncludedObjectVersions":"Current"`) {
		t.Errorf("source: the inventory must list current versions only: %s", inv)
	}
	// EventBridge notifications: on the source only.
	for _, r := range b.resources("Custom::S3BucketNotifications") {
		p := r["Properties"].(map[string]any)
		if !strings.HasPrefix(render(p["BucketName"]), "<Ref:SourceBucket") {
			t.Errorf("bucket notifications configured on %s, want the source bucket only", render(p["BucketName"]))
		}
		if js(p["NotificationConfiguration"]) != `{"EventBridgeConfiguration":{}}` {
			t.Errorf("source notifications: %s", js(p["NotificationConfiguration"]))
		}
	}
}

func TestStateTable(t *testing.T) {
	b := defaultStack(t)
	_, p := b.one(t, "AWS::DynamoDB::Table", "StateTable")
	checks := map[string]string{
		"KeySchema":                        `[{"AttributeName":"pk","KeyType":"HASH"}]`,
		"BillingMode":                      `"PAY_PER_REQUEST"`,
		"PointInTimeRecoverySpecification": `{"PointInTimeRecoveryEnabled":true}`,
		"TimeToLiveSpecification":          `{"AttributeName":"expires_at","Enabled":true}`,
		"SSESpecification":                 `{"SSEEnabled":true}`,
		"GlobalSecondaryIndexes":           `[{"IndexName":"status-shard-index","KeySchema":[{"AttributeName":"status_shard","KeyType":"HASH"},{"AttributeName":"updated_at","KeyType":"RANGE"}],"Projection":{"ProjectionType":"ALL"}}]`,
	}
	for k, want := range checks {
		if got := js(p[k]); got != want {
			t.Errorf("table %s = %s, want %s", k, got, want)
		}
	}
}

func TestQueuesRetentionEncryptionRedrive(t *testing.T) {
	b := defaultStack(t)
	for id, r := range b.resources("AWS::SQS::Queue") {
		p := r["Properties"].(map[string]any)
		if p["MessageRetentionPeriod"] != float64(14*24*3600) {
			t.Errorf("%s: retention %v, want 14 days", id, p["MessageRetentionPeriod"])
		}
		if p["SqsManagedSseEnabled"] != true && p["KmsMasterKeyId"] == nil {
			t.Errorf("%s: not encrypted", id)
		}
	}
	for id, r := range b.resources("AWS::SQS::QueuePolicy") {
		if !strings.Contains(js(r["Properties"]), `"aws:SecureTransport":"false"`) {
			t.Errorf("%s: queue does not enforce TLS", id)
		}
	}
	// Each routing queue has its own redrive DLQ.
	for q, dlq := range map[string]string{"RemediationQueue": "RemediationRedriveDLQ", "DeadLetterQueue": "DeadLetterRedriveDLQ"} {
		_, p := b.one(t, "AWS::SQS::Queue", q)
		dlqID, _ := b.one(t, "AWS::SQS::Queue", dlq)
		rp := p["RedrivePolicy"].(map[string]any)
		if render(rp["deadLetterTargetArn"]) != "<GetAtt:"+dlqID+".Arn>" || rp["maxReceiveCount"] != float64(5) {
			t.Errorf("%s redrive policy %s, want its own %s", q, js(rp), dlqID)
		}
	}
}

// TestFunctionEnvironmentIsTheDeclaredSettings: every variable the stack
// sets on a function is one internal/config declares, and every declared
// variable is set, on every function; the only others are GDAL's and PROJ's
// runtime configuration and the layer's iconv modules (GCONV_PATH), on convert.
func TestFunctionEnvironmentIsTheDeclaredSettings(t *testing.T) {
	b := defaultStack(t)
	declared := slices.Sorted(slices.Values(config.LambdaEnvNames()))
	for _, name := range FunctionNames {
		id := strings.ToUpper(name[:1]) + name[1:]
		_, p := b.one(t, "AWS::Lambda::Function", id+"Function")
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		var set []string
		for k := range env {
			switch {
			case strings.HasPrefix(k, "GEOMIGRATE_"):
				set = append(set, k)
			case name == "convert" && (strings.HasPrefix(k, "GDAL_") || strings.HasPrefix(k, "PROJ_") || strings.HasPrefix(k, "CPL_") || k == "GCONV_PATH"):
			default:
				t.Errorf("%s: sets %s, which is no declared setting", name, k)
			}
		}
		slices.Sort(set)
		if !slices.Equal(set, declared) {
			t.Errorf("%s sets\n%v\nconfig declares\n%v", name, set, declared)
		}
	}
}

func TestFunctionsRuntimeArchLayerEnv(t *testing.T) {
	b := defaultStack(t)
	layerID, _ := b.one(t, "AWS::Lambda::LayerVersion", "GdalLayer")
	tableID, _ := b.one(t, "AWS::DynamoDB::Table", "StateTable")
	dstID, _ := b.one(t, "AWS::S3::Bucket", "DestinationBucket")
	common := map[string]string{
		"GEOMIGRATE_DEST_BUCKET":                 "<Ref:" + dstID + ">",
		"GEOMIGRATE_DEST_PREFIX":                 "",
		"GEOMIGRATE_STAGING_PREFIX":              "_staging/",
		"GEOMIGRATE_STATE_TABLE":                 "<Ref:" + tableID + ">",
		"GEOMIGRATE_LEASE_SECONDS":               "1200",
		"GEOMIGRATE_FINGERPRINT_THRESHOLD_BYTES": "1073741824",
		"GEOMIGRATE_VECTOR_FORMAT":               "GeoParquet",
		"GEOMIGRATE_ZSTD_LEVEL":                  "3",
		"GEOMIGRATE_ENGINE_VERSION":              layerManifestGDAL(t),
		"GEOMIGRATE_LOG_LEVEL":                   "info",
		"GEOMIGRATE_BREAKER_THRESHOLD":           "5",
		"GEOMIGRATE_BREAKER_WINDOW_SECONDS":      "120",
		"GEOMIGRATE_BREAKER_COOLDOWN_SECONDS":    "60",
	}
	gdal := map[string]string{
		"GDAL_DATA": "/opt/share/gdal", "PROJ_DATA": "/opt/share/proj", "PROJ_LIB": "/opt/share/proj", "CPL_TMPDIR": "/tmp",
		"CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".geomigrate-network-disabled", "GDAL_HTTP_MAX_RETRY": "0",
	}
	for _, name := range FunctionNames {
		id := strings.ToUpper(name[:1]) + name[1:]
		_, p := b.one(t, "AWS::Lambda::Function", id+"Function")
		if p["Runtime"] != "provided.al2023" || js(p["Architectures"]) != `["arm64"]` || p["Handler"] != "bootstrap" {
			t.Errorf("%s: runtime %v arch %v handler %v", name, p["Runtime"], p["Architectures"], p["Handler"])
		}
		if js(p["TracingConfig"]) != `{"Mode":"Active"}` {
			t.Errorf("%s: X-Ray tracing off", name)
		}
		if !strings.Contains(js(p["LoggingConfig"]), "LogGroup") {
			t.Errorf("%s: no own log group", name)
		}
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		for k, v := range common {
			if render(env[k]) != v {
				t.Errorf("%s: env %s = %q, want %q", name, k, render(env[k]), v)
			}
		}
		for k, v := range gdal {
			got, ok := env[k]
			if name == "convert" && render(got) != v {
				t.Errorf("convert: env %s = %v, want %q", k, got, v)
			}
			if name != "convert" && ok {
				t.Errorf("%s: has GDAL env %s", name, k)
			}
		}
		layers := js(p["Layers"])
		if name == "convert" {
			if layers != `[{"Ref":"`+layerID+`"}]` {
				t.Errorf("convert layers %s, want the GDAL layer", layers)
			}
			if p["MemorySize"] != float64(10240) || p["Timeout"] != float64(900) || js(p["EphemeralStorage"]) != `{"Size":10240}` {
				t.Errorf("convert sized %v MB / %v s / %s, want 10240 / 900 / 10240", p["MemorySize"], p["Timeout"], js(p["EphemeralStorage"]))
			}
		} else if p["Layers"] != nil {
			t.Errorf("%s has layers %s", name, layers)
		}
		if _, ok := p["ReservedConcurrentExecutions"]; ok {
			t.Errorf("%s: reserved concurrency set by default", name)
		}
	}
	_, lp := b.one(t, "AWS::Lambda::LayerVersion", "GdalLayer")
	if js(lp["CompatibleRuntimes"]) != `["provided.al2023"]` || js(lp["CompatibleArchitectures"]) != `["arm64"]` {
		t.Errorf("layer compat %s %s", js(lp["CompatibleRuntimes"]), js(lp["CompatibleArchitectures"]))
	}
}

func TestSettingsFromContext(t *testing.T) {
	b := synth(t, map[string]any{
		"architecture": "x86_64", "convertMemoryMB": "4096", "convertReservedConcurrency": "7",
		"vectorFormat": "FlatGeobuf", "sourcePrefixes": `["raw/", "legacy/gis/"]`, "destPrefix": "cog/",
		"gdalLayerArn": "arn:aws:lambda:eu-west-1:123456789012:layer:gdal:3",
	})
	_, p := b.one(t, "AWS::Lambda::Function", "ConvertFunction")
	if js(p["Architectures"]) != `["x86_64"]` || p["MemorySize"] != float64(4096) || p["ReservedConcurrentExecutions"] != float64(7) {
		t.Errorf("convert: %v %v %v", p["Architectures"], p["MemorySize"], p["ReservedConcurrentExecutions"])
	}
	if js(p["Layers"]) != `["arn:aws:lambda:eu-west-1:123456789012:layer:gdal:3"]` {
		t.Errorf("layer ARN from context not used: %s", js(p["Layers"]))
	}
	env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
	if env["GEOMIGRATE_VECTOR_FORMAT"] != "FlatGeobuf" || env["GEOMIGRATE_DEST_PREFIX"] != "cog/" {
		t.Errorf("env from context: %v", env)
	}
	must(t, "no layer resource when an ARN is given", func() {
		b.template.ResourceCountIs(jsii.String("AWS::Lambda::LayerVersion"), jsii.Number(0))
	})
	_, rule := b.one(t, "AWS::Events::Rule", "SourceObjectCreatedRule")
	if got := js(rule["EventPattern"].(map[string]any)["detail"].(map[string]any)["object"]); got != `{"key":[{"prefix":"raw/"},{"prefix":"legacy/gis/"}]}` {
		t.Errorf("prefix filter %s", got)
	}
	g := strings.Join(grants(b.statements(t, "ConvertRole")), "\n")
	for _, want := range []string{"s3:GetObject on <GetAtt:SourceBucket", "/raw/*", "/legacy/gis/*"} {
		if !strings.Contains(g, want) {
			t.Errorf("convert role lacks %q:\n%s", want, g)
		}
	}
	if strings.Contains(g, "/incoming/*") {
		t.Error("convert role still reads the default prefix")
	}
	gp := strings.Join(grants(b.statements(t, "PromoteRole")), "\n")
	if !regexp.MustCompile(`s3:PutObject on <GetAtt:DestinationBucket\w+\.Arn>/cog/\*`).MatchString(gp) {
		t.Errorf("promote does not write under destPrefix:\n%s", gp)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, ctx := range map[string]map[string]any{
		"same bucket":                    {"sourceBucketName": "geo-data", "destBucketName": "geo-data"},
		"bad format":                     {"vectorFormat": "Shapefile"},
		"express too long":               {"backfillChildExecutionType": "EXPRESS"},
		"wildcard prefix":                {"sourcePrefixes": "in*/"},
		"staging no slash":               {"stagingPrefix": "_staging"},
		"memory too big":                 {"convertMemoryMB": "20000"},
		"not a number":                   {"zstdLevel": "high"},
		"dest under staging":             {"destPrefix": "_staging/out/"},
		"lease below a function timeout": {"leaseSeconds": "600"},
	} {
		c := baseContext(t)
		for k, v := range ctx {
			c[k] = v
		}
		if _, _, _, err := NewApp(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMissingLayerMessage(t *testing.T) {
	dir := t.TempDir()
	for _, n := range FunctionNames {
		os.MkdirAll(filepath.Join(dir, n), 0o755)
		os.WriteFile(filepath.Join(dir, n, "bootstrap"), []byte("x"), 0o755)
	}
	c := &Config{BuildDir: dir, GDALLayerZip: filepath.Join(dir, "none.zip"), RepoRoot: dir}
	_, err := ResolveAssets(c)
	if err == nil || !strings.Contains(err.Error(), "gdalLayerArn") || !strings.Contains(err.Error(), "make layer") {
		t.Fatalf("want a clear message naming gdalLayerArn and make layer, got %v", err)
	}
	os.RemoveAll(filepath.Join(dir, "convert"))
	if _, err := ResolveAssets(c); err == nil || !strings.Contains(err.Error(), "make layer LAYER_ARCH=arm64") {
		t.Fatalf("missing convert build: %v", err)
	}
	c.PlaceholderAssets = true
	a, err := ResolveAssets(c)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Cleanup()
	if a.FunctionDirs["hashcheck"] != filepath.Join(dir, "hashcheck") || len(a.Placeholders) != 3 || a.ContainerContext == "" {
		t.Errorf("real builds must be used where present: %v %v", a.FunctionDirs, a.Placeholders)
	}
}

// definition reassembles a state machine's DefinitionString (Fn::Join) into JSON text.
func definition(t *testing.T, b *built, prefix string) (string, map[string]any) {
	t.Helper()
	_, p := b.one(t, "AWS::StepFunctions::StateMachine", prefix)
	if _, ok := p["DefinitionS3Location"]; ok {
		t.Fatalf("%s: definition is an S3 asset; it must be inline", prefix)
	}
	if _, ok := p["DefinitionSubstitutions"]; ok {
		t.Errorf("%s: placeholders must be substituted in the template, not left to DefinitionSubstitutions", prefix)
	}
	text := render(p["DefinitionString"])
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("%s: definition is not JSON after rendering: %v", prefix, err)
	}
	return text, doc
}

func TestStateMachines(t *testing.T) {
	b := defaultStack(t)
	for _, sm := range []string{"MigrateStateMachine", "BackfillStateMachine"} {
		text, _ := definition(t, b, sm)
		if where := LeftoverDollarBrace(text); where != "" {
			t.Errorf("%s: \"${\" left at %s", sm, where)
		}
		if Placeholders(text) != nil {
			t.Errorf("%s: placeholders left: %v", sm, Placeholders(text))
		}
		_, p := b.one(t, "AWS::StepFunctions::StateMachine", sm)
		if p["StateMachineType"] != "STANDARD" || js(p["TracingConfiguration"]) != `{"Enabled":true}` {
			t.Errorf("%s: type %v tracing %v", sm, p["StateMachineType"], p["TracingConfiguration"])
		}
		if !strings.Contains(js(p["LoggingConfiguration"]), "CloudWatchLogsLogGroup") {
			t.Errorf("%s: logging off", sm)
		}
	}
	_, mp := b.one(t, "AWS::StepFunctions::StateMachine", "MigrateStateMachine")
	if !strings.Contains(js(mp["LoggingConfiguration"]), `"IncludeExecutionData":true,"Level":"ALL"`) {
		t.Errorf("migrate logging: %s", js(mp["LoggingConfiguration"]))
	}

	// Every placeholder became a reference to the right resource.
	text, _ := definition(t, b, "MigrateStateMachine")
	for _, want := range []string{`"<GetAtt:HashcheckFunction`, `"<GetAtt:ConvertFunction`, `"<GetAtt:PromoteFunction`, `"<GetAtt:ClassifyFunction`, `"<Ref:RemediationQueue`, `"<Ref:DeadLetterQueue`} {
		if !strings.Contains(text, want) {
			t.Errorf("migrate definition lacks %s", want)
		}
	}
	text, doc := definition(t, b, "BackfillStateMachine")
	for _, want := range []string{`"StateMachineArn":"<Ref:MigrateStateMachine`, `"Bucket":"<Ref:SourceBucket`, `"Bucket":"<Ref:OpsBucket`} {
		if !strings.Contains(strings.ReplaceAll(text, " ", ""), want) {
			t.Errorf("backfill definition lacks %s", want)
		}
	}
	if !strings.Contains(js(doc), `"ExecutionType":"STANDARD"`) {
		t.Error("backfill children are not STANDARD by default")
	}
	// An item whose child never started is named in the dead-letter queue,
	// which the backfill role may send to.
	if !strings.Contains(strings.ReplaceAll(text, " ", ""), `"QueueUrl":"<Ref:DeadLetterQueue`) {
		t.Error("backfill definition does not send unstarted items to the dead-letter queue")
	}
	if g := strings.Join(grants(b.statements(t, "BackfillStateMachineRole")), "\n"); !strings.Contains(g, "sqs:SendMessage on <GetAtt:DeadLetterQueue") {
		t.Errorf("backfill role cannot send to the dead-letter queue:\n%s", g)
	}
}

func TestBackfillExpressVariant(t *testing.T) {
	b := synth(t, map[string]any{"backfillChildExecutionType": "EXPRESS", "convertTimeoutSeconds": "240"})
	text, doc := definition(t, b, "BackfillStateMachine")
	if LeftoverDollarBrace(text) != "" || Placeholders(text) != nil {
		t.Errorf("express backfill: \"${\" left")
	}
	if strings.Contains(text, ".sync") || strings.Contains(js(doc), `"ExecutionType":"STANDARD"`) {
		t.Error("express variant still uses .sync or STANDARD children")
	}
	if !strings.Contains(js(doc), `"ExecutionType":"EXPRESS"`) || !strings.Contains(text, "<GetAtt:ConvertFunction") {
		t.Error("express variant does not run the migrate states inline")
	}
	// The inlined states report their own State names: the error alarms count them too.
	for _, a := range b.resources("AWS::CloudWatch::Alarm") {
		p := a["Properties"].(map[string]any)
		if p["AlarmName"] == "geomigrate-ConvertErrors" && !strings.Contains(js(p), `"Value":"BackfillPrefixConvert"`) {
			t.Errorf("express: ConvertErrors misses the inlined Convert states: %s", js(p))
		}
	}
	g := strings.Join(grants(b.statements(t, "BackfillStateMachineRole")), "\n")
	if !strings.Contains(g, "lambda:InvokeFunction on <GetAtt:ConvertFunction") || strings.Contains(g, "states:StartExecution on arn:<Ref:AWS::Partition>:states:<Ref:AWS::Region>:<Ref:AWS::AccountId>:stateMachine:geomigrate-migrate") {
		t.Errorf("express backfill role:\n%s", g)
	}
	// Express children send no status-change events: after each Map, executionfailed closes
	// the jobs of the children that timed out from the Map Run's result files, which it may read.
	states := doc["States"].(map[string]any)
	for mapName, label := range map[string]string{"BackfillFromPrefix": "BackfillPrefix", "BackfillFromManifest": "BackfillManifest"} {
		closeName := label + statemachine.CloseMapRunState
		m, _ := states[mapName].(map[string]any)
		cl, _ := states[closeName].(map[string]any)
		if m == nil || cl == nil || m["Next"] != closeName || cl["Next"] != "BackfillDone" {
			t.Fatalf("%s: Next %v, want %s (then BackfillDone): %s", mapName, m["Next"], closeName, js(cl))
		}
		p := strings.NewReplacer(" ", "", `\u003c`, "<", `\u003e`, ">").Replace(js(cl["Parameters"]))
		if !strings.Contains(p, `"FunctionName":"<GetAtt:ExecutionfailedFunction`) || !strings.Contains(p, `"ResultWriterDetails.$":"$.map_run.ResultWriterDetails"`) {
			t.Errorf("%s: parameters %s", closeName, p)
		}
		if cl["Retry"] == nil || cl["Catch"] == nil {
			t.Errorf("%s has no Retry or Catch", closeName)
		}
	}
	if !strings.Contains(g, "lambda:InvokeFunction on <GetAtt:ExecutionfailedFunction") {
		t.Errorf("express backfill role cannot invoke executionfailed:\n%s", g)
	}
	if g := strings.Join(grants(b.statements(t, "ExecutionfailedRole")), "\n"); !strings.Contains(g, "s3:GetObject on <GetAtt:OpsBucket") || !strings.Contains(g, "/backfill-results/*") {
		t.Errorf("executionfailed cannot read the backfill results:\n%s", g)
	}
}

func TestEventBridgeRule(t *testing.T) {
	b := defaultStack(t)
	srcID, _ := b.one(t, "AWS::S3::Bucket", "SourceBucket")
	smID, _ := b.one(t, "AWS::StepFunctions::StateMachine", "MigrateStateMachine")
	dlqID, _ := b.one(t, "AWS::SQS::Queue", "EventsDLQ")
	must(t, "rule pattern and target", func() {
		b.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), &map[string]any{
			"EventPattern": map[string]any{
				"source":      []any{"aws.s3"},
				"detail-type": []any{"Object Created"},
				"detail": map[string]any{
					"bucket": map[string]any{"name": []any{map[string]any{"Ref": srcID}}},
					"object": map[string]any{"key": []any{map[string]any{"prefix": "incoming/"}}},
				},
			},
			"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
				"Arn":              map[string]any{"Ref": smID},
				"DeadLetterConfig": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}},
				"RetryPolicy":      map[string]any{"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185},
			})},
		})
	})
	_, rule := b.one(t, "AWS::Events::Rule", "SourceObjectCreatedRule")
	pattern := js(rule["EventPattern"])
	if strings.Contains(pattern, "DestinationBucket") {
		t.Error("the rule can match the destination bucket")
	}
	target := rule["Targets"].([]any)[0].(map[string]any)
	for _, k := range []string{"Input", "InputPath", "InputTransformer"} {
		if _, ok := target[k]; ok {
			t.Errorf("target has %s; the raw event must be passed", k)
		}
	}
	// The target's DLQ accepts messages from this rule only.
	found := false
	for _, r := range b.resources("AWS::SQS::QueuePolicy") {
		p := js(r["Properties"])
		if strings.Contains(p, dlqID) && strings.Contains(p, "events.amazonaws.com") && strings.Contains(p, "aws:SourceArn") {
			found = true
		}
	}
	if !found {
		t.Error("EventBridge DLQ policy (events.amazonaws.com, aws:SourceArn) missing")
	}
}

func TestAlarms(t *testing.T) {
	b := defaultStack(t)
	alarms := b.resources("AWS::CloudWatch::Alarm")
	byName := map[string]map[string]any{}
	for _, a := range alarms {
		p := a["Properties"].(map[string]any)
		byName[p["AlarmName"].(string)] = p
		if len(p["AlarmActions"].([]any)) == 0 {
			t.Errorf("%v: no alarm action", p["AlarmName"])
		}
	}
	check := func(name, metric string, threshold float64) {
		t.Helper()
		p, ok := byName["geomigrate-"+name]
		if !ok {
			t.Errorf("alarm %s missing", name)
			return
		}
		if p["Threshold"] != threshold || p["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s: %v %v, want > %v", name, p["ComparisonOperator"], p["Threshold"], threshold)
		}
		if metric != "" && !strings.Contains(js(p), `"MetricName":"`+metric+`"`) {
			t.Errorf("%s: metric is not %s", name, metric)
		}
	}
	for _, q := range []string{"DeadLetter", "DeadLetterRedrive", "RemediationRedrive", "Events"} {
		check(q+"DlqDepth", "ApproximateNumberOfMessagesVisible", 0)
		check(q+"DlqOldestMessage", "ApproximateAgeOfOldestMessage", 48*3600)
	}
	check("RemediationRate", "NumberOfMessagesSent", 5)
	if !strings.Contains(js(byName["geomigrate-RemediationRate"]), "ExecutionsStarted") {
		t.Error("remediation rate is not relative to started executions")
	}
	check("MigrateUnroutedFailures", "ExecutionsFailed", 0)
	check("BackfillFailed", "ExecutionsFailed", 0)
	check("BreakerOpened", "BreakerTransitions", 0)
	if a := js(byName["geomigrate-BreakerOpened"]); !strings.Contains(a, `"Namespace":"`+emf.Namespace+`"`) || !strings.Contains(a, `"Value":"OPEN"`) {
		t.Errorf("breaker alarm does not watch the handlers' To=OPEN transitions: %s", a)
	}
	for _, f := range []string{"Hashcheck", "Convert", "Classify", "Promote", "Executionfailed"} {
		check(f+"Throttles", "Throttles", 0)
		check(f+"Errors", "Errors", 5)
	}
	// The handlers' error alarms count their EMF Errors of the systemic and
	// unknown tiers only, by the state that invokes them.
	for f, state := range map[string]string{"Hashcheck": "HashCheck", "Convert": "Convert", "Classify": "Classify", "Promote": "Promote"} {
		a := js(byName["geomigrate-"+f+"Errors"]["Metrics"])
		for _, tier := range []string{"systemic", "unknown"} {
			want := `"Dimensions":[{"Name":"State","Value":"` + state + `"},{"Name":"Tier","Value":"` + tier + `"}],"MetricName":"Errors","Namespace":"` + emf.Namespace + `"`
			if !strings.Contains(a, want) {
				t.Errorf("%sErrors does not count %s errors of state %s: %s", f, tier, state, a)
			}
		}
		if strings.Contains(a, "data_specific") || strings.Contains(a, "transient") || strings.Contains(a, "AWS/Lambda") {
			t.Errorf("%sErrors counts data, transient or Lambda-level errors: %s", f, a)
		}
	}
	if a := js(byName["geomigrate-ExecutionfailedErrors"]); !strings.Contains(a, `"Namespace":"AWS/Lambda"`) {
		t.Errorf("executionfailed (no tiers) is not alarmed on its Lambda errors: %s", a)
	}
	for sm, ref := range map[string]string{"Migrate": "MigrateStateMachine", "Backfill": "BackfillStateMachine"} {
		check(sm+"ExecutionThrottled", "ExecutionThrottled", 0)
		a := js(byName["geomigrate-"+sm+"ExecutionThrottled"])
		if !strings.Contains(a, `"Namespace":"AWS/States"`) || !strings.Contains(a, `"Name":"StateMachineArn","Value":{"Ref":"`+ref) {
			t.Errorf("%sExecutionThrottled does not watch %s: %s", sm, ref, a)
		}
	}
	check("StateTableThrottledRequests", "ThrottledRequests", 0)
	if a := js(byName["geomigrate-StateTableThrottledRequests"]); !strings.Contains(a, `"Value":"PutItem"`) || !strings.Contains(a, `"Value":"TransactWriteItems"`) || !strings.Contains(a, `"Name":"TableName","Value":{"Ref":"StateTable`) {
		t.Errorf("ThrottledRequests alarm does not sum the table's write operations: %s", a)
	}
	_, table := b.one(t, "AWS::DynamoDB::Table", "StateTable")
	indexes, _ := table["GlobalSecondaryIndexes"].([]any)
	if len(indexes) == 0 {
		t.Fatal("state table has no global secondary index")
	}
	for _, m := range []string{"WriteThrottleEvents", "ReadThrottleEvents"} {
		check("StateTable"+m, m, 0)
		if a := js(byName["geomigrate-StateTable"+m]); !strings.Contains(a, `"Dimensions":[{"Name":"TableName","Value":{"Ref":"StateTable`) || strings.Contains(a, "GlobalSecondaryIndexName") {
			t.Errorf("StateTable%s is not the table's own: %s", m, a)
		}
		// One alarm per index the table has, wherever its name comes from.
		for _, ix := range indexes {
			name := ix.(map[string]any)["IndexName"].(string)
			found := false
			for _, p := range byName {
				a := js(p)
				if strings.Contains(a, `"MetricName":"`+m+`"`) && strings.Contains(a, `{"Name":"GlobalSecondaryIndexName","Value":"`+name+`"}`) && strings.Contains(a, `"Name":"TableName","Value":{"Ref":"StateTable`) {
					found = true
					if p["Threshold"] != 0.0 || p["ComparisonOperator"] != "GreaterThanThreshold" {
						t.Errorf("%s on %s: %v %v, want > 0", m, name, p["ComparisonOperator"], p["Threshold"])
					}
				}
			}
			if !found {
				t.Errorf("no %s alarm on index %s", m, name)
			}
		}
	}
	_, d := b.one(t, "AWS::CloudWatch::Dashboard", "Dashboard")
	if body := render(d["DashboardBody"]); !strings.Contains(body, "Outcomes by tier") || !strings.Contains(body, "data_specific") {
		t.Error("dashboard lacks outcomes by tier")
	}
}

func TestIAMLeastPrivilege(t *testing.T) {
	b := defaultStack(t)
	// 1. No "*" resource without a written reason; no wildcard actions anywhere.
	for id, p := range b.resources("AWS::IAM::Policy") {
		for _, st := range p["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			s := st.(map[string]any)
			for _, a := range list(s["Action"]) {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %s", id, a)
				}
			}
			for _, r := range list(s["Resource"]) {
				if r != "*" {
					continue
				}
				for _, a := range list(s["Action"]) {
					if StarResourceReasons[a] == "" {
						t.Errorf("%s: %s on * has no written reason (StarResourceReasons)", id, a)
					}
				}
			}
		}
	}
	// 2. Each role reaches only its own buckets/prefixes, table and queues.
	allowed := map[string][]string{
		"HashcheckRole": {
			`logs:(CreateLogStream|PutLogEvents) on <GetAtt:HashcheckLogs\w+\.Arn>`,
			`s3:GetObject on <GetAtt:SourceBucket\w+\.Arn>/incoming/\*`,
			`s3:ListBucket on <GetAtt:SourceBucket\w+\.Arn>`,
			`s3:GetObject on <GetAtt:DestinationBucket\w+\.Arn>/\*`,
			`s3:ListBucket on <GetAtt:DestinationBucket\w+\.Arn>`,
			`dynamodb:(GetItem|PutItem|UpdateItem|ConditionCheckItem) on <GetAtt:StateTable\w+\.Arn>`,
			policyGrant,
			`xray:\w+ on \*`,
		},
		"ConvertRole": {
			`logs:(CreateLogStream|PutLogEvents) on <GetAtt:ConvertLogs\w+\.Arn>`,
			`s3:GetObject on <GetAtt:SourceBucket\w+\.Arn>/incoming/\*`,
			`s3:ListBucket on <GetAtt:SourceBucket\w+\.Arn>`,
			`s3:(PutObject|AbortMultipartUpload) on <GetAtt:DestinationBucket\w+\.Arn>/_staging/\*`,
			`dynamodb:(GetItem|PutItem|UpdateItem|ConditionCheckItem) on <GetAtt:StateTable\w+\.Arn>`,
			`xray:\w+ on \*`,
		},
		"PromoteRole": {
			`logs:(CreateLogStream|PutLogEvents) on <GetAtt:PromoteLogs\w+\.Arn>`,
			`s3:(GetObject|PutObject|DeleteObject|AbortMultipartUpload) on <GetAtt:DestinationBucket\w+\.Arn>/_staging/\*`,
			`s3:(PutObject|GetObject|AbortMultipartUpload) on <GetAtt:DestinationBucket\w+\.Arn>/\*`,
			`s3:ListBucket on <GetAtt:DestinationBucket\w+\.Arn>`,
			`dynamodb:(GetItem|PutItem|UpdateItem|ConditionCheckItem) on <GetAtt:StateTable\w+\.Arn>`,
			`xray:\w+ on \*`,
		},
		"ClassifyRole": {
			`logs:(CreateLogStream|PutLogEvents) on <GetAtt:ClassifyLogs\w+\.Arn>`,
			`dynamodb:(GetItem|PutItem|UpdateItem|ConditionCheckItem) on <GetAtt:StateTable\w+\.Arn>`,
			`s3:DeleteObject on <GetAtt:DestinationBucket\w+\.Arn>/_staging/\*`,
			`s3:ListBucket on <GetAtt:DestinationBucket\w+\.Arn>`,
			`s3:(PutObject|GetObject|AbortMultipartUpload) on <GetAtt:OpsBucket\w+\.Arn>/_staging/quarantine/\*`,
			`s3:(PutObject|GetObject|AbortMultipartUpload) on <GetAtt:OpsBucket\w+\.Arn>/quarantine/\*`,
			`s3:GetObject on <GetAtt:SourceBucket\w+\.Arn>/\S*\*`,
			`s3:ListBucket on <GetAtt:SourceBucket\w+\.Arn>`,
			policyGrant,
			`xray:\w+ on \*`,
		},
		"ExecutionfailedRole": {
			`logs:(CreateLogStream|PutLogEvents) on <GetAtt:ExecutionfailedLogs\w+\.Arn>`,
			`dynamodb:(GetItem|PutItem|UpdateItem|ConditionCheckItem) on <GetAtt:StateTable\w+\.Arn>`,
			`dynamodb:Query on <GetAtt:StateTable\w+\.Arn>/index/status-shard-index`,
			`s3:DeleteObject on <GetAtt:DestinationBucket\w+\.Arn>/_staging/\*`,
			`s3:ListBucket on <GetAtt:DestinationBucket\w+\.Arn>`,
			`sqs:SendMessage on <GetAtt:DeadLetterQueue\w+\.Arn>`,
			`s3:(PutObject|GetObject|AbortMultipartUpload) on <GetAtt:OpsBucket\w+\.Arn>/_staging/quarantine/\*`,
			`s3:(PutObject|GetObject|AbortMultipartUpload) on <GetAtt:OpsBucket\w+\.Arn>/quarantine/\*`,
			`s3:GetObject on <GetAtt:SourceBucket\w+\.Arn>/\S*\*`,
			`s3:ListBucket on <GetAtt:SourceBucket\w+\.Arn>`,
			// The EXPRESS backfill's Map Run results (read-only).
			`s3:GetObject on <GetAtt:OpsBucket\w+\.Arn>/backfill-results/\*`,
			`xray:\w+ on \*`,
		},
		"MigrateStateMachineRole": {
			`lambda:InvokeFunction on <GetAtt:(Hashcheck|Convert|Promote|Classify)Function\w+\.Arn>`,
			`sqs:SendMessage on <GetAtt:(RemediationQueue|DeadLetterQueue)\w+\.Arn>`,
			`(logs|xray):\w+ on \*`,
			// ConvertInContainer (ecs:runTask.sync) and its result read.
			`ecs:RunTask on <Ref:ConvertTaskDefinition\w+>`,
			`ecs:(StopTask|DescribeTasks) on arn:<Ref:AWS::Partition>:ecs:<Ref:AWS::Region>:<Ref:AWS::AccountId>:task/<Ref:ConvertCluster\w+>/\*`,
			`events:(PutTargets|PutRule|DescribeRule) on arn:<Ref:AWS::Partition>:events:<Ref:AWS::Region>:<Ref:AWS::AccountId>:rule/StepFunctionsGetEventsForECSTaskRule`,
			`iam:PassRole on <GetAtt:ConvertTask(Execution)?Role\w+\.Arn>`,
			`s3:GetObject on <GetAtt:DestinationBucket\w+\.Arn>/_staging/\*/container-result-\*`,
		},
		"ConvertTaskRole": {
			`s3:GetObject on <GetAtt:SourceBucket\w+\.Arn>/incoming/\*`,
			`s3:ListBucket on <GetAtt:SourceBucket\w+\.Arn>`,
			`s3:(PutObject|AbortMultipartUpload) on <GetAtt:DestinationBucket\w+\.Arn>/_staging/\*`,
			`dynamodb:(GetItem|PutItem|UpdateItem|ConditionCheckItem) on <GetAtt:StateTable\w+\.Arn>`,
		},
		"ConvertTaskExecutionRole": {
			`logs:(CreateLogStream|PutLogEvents) on <GetAtt:ConvertTaskLogs\w+\.Arn>`,
			`ecr:(BatchCheckLayerAvailability|GetDownloadUrlForLayer|BatchGetImage) on .*container-assets.*`,
			`ecr:GetAuthorizationToken on \*`,
		},
		"BackfillStateMachineRole": {
			`s3:ListBucket on <GetAtt:SourceBucket\w+\.Arn>`,
			`s3:GetObject on <GetAtt:OpsBucket\w+\.Arn>/inventory/\*`,
			`s3:(PutObject|GetObject|ListMultipartUploadParts|AbortMultipartUpload) on <GetAtt:OpsBucket\w+\.Arn>/backfill-results/\*`,
			`states:StartExecution on arn:<Ref:AWS::Partition>:states:<Ref:AWS::Region>:<Ref:AWS::AccountId>:stateMachine:geomigrate-(backfill|migrate)`,
			`states:(DescribeExecution|StopExecution) on arn:<Ref:AWS::Partition>:states:<Ref:AWS::Region>:<Ref:AWS::AccountId>:execution:geomigrate-(backfill/|migrate:)\*`,
			`states:RedriveExecution on arn:<Ref:AWS::Partition>:states:<Ref:AWS::Region>:<Ref:AWS::AccountId>:execution:geomigrate-backfill/\*`,
			`events:(PutTargets|PutRule|DescribeRule) on arn:<Ref:AWS::Partition>:events:<Ref:AWS::Region>:<Ref:AWS::AccountId>:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule`,
			policyGrant,
			`sqs:SendMessage on <GetAtt:DeadLetterQueue\w+\.Arn>`,
			`(logs|xray):\w+ on \*`,
		},
		"MigrateStateMachineEventsRole": {
			`states:StartExecution on <Ref:MigrateStateMachine\w+>`,
		},
	}
	for role, pats := range allowed {
		var res []*regexp.Regexp
		for _, p := range pats {
			res = append(res, regexp.MustCompile("^"+p+"$"))
		}
		for _, g := range grants(b.statements(t, role)) {
			ok := false
			for _, re := range res {
				if re.MatchString(g) {
					ok = true
					break
				}
			}
			if !ok {
				t.Errorf("%s: unexpected grant %s", role, g)
			}
		}
	}
	// 3. Deletes (promote; classify and executionfailed for jobs that will not be promoted) never
	// reach outside staging. The state machine only sends.
	for _, p := range b.resources("AWS::IAM::Policy") {
		for _, g := range grants(b.statementsOf(p)) {
			if strings.HasPrefix(g, "s3:DeleteObject") && !strings.HasSuffix(g, "/_staging/*") {
				t.Errorf("delete outside staging: %s", g)
			}
			if strings.HasPrefix(g, "sqs:") && !strings.HasPrefix(g, "sqs:SendMessage") {
				t.Errorf("queue access beyond SendMessage: %s", g)
			}
		}
	}
	for _, role := range []string{"ClassifyRole", "ExecutionfailedRole"} {
		for _, st := range b.statements(t, role) {
			if slices.Contains(list(st["Action"]), "s3:ListBucket") && strings.Contains(js(st["Resource"]), "DestinationBucket") &&
				js(st["Condition"]) != `{"StringLike":{"s3:prefix":"_staging/*"}}` {
				t.Errorf("%s lists the destination beyond staging: %s", role, js(st))
			}
		}
		// They read the routed source (its quarantine bundle) and write
		// only bundles: under staging first, then the quarantine prefix.
		for _, g := range grants(b.statements(t, role)) {
			bundle := strings.Contains(g, "OpsBucket") && (strings.HasSuffix(g, "/_staging/quarantine/*") || strings.HasSuffix(g, "/quarantine/*"))
			if strings.HasPrefix(g, "s3:PutObject") && !bundle {
				t.Errorf("%s writes outside the quarantine prefixes: %s", role, g)
			}
			if strings.HasPrefix(g, "s3:GetObject") && strings.Contains(g, "DestinationBucket") {
				t.Errorf("%s reads destination objects: %s", role, g)
			}
		}
	}
	if g := strings.Join(grants(b.statements(t, "PromoteRole")), "\n"); strings.Contains(g, "SourceBucket") {
		t.Errorf("promote reaches the source:\n%s", g)
	}
}

// policyGrant is the one read of the run-time policy parameter.
const policyGrant = `ssm:GetParameter on arn:<Ref:AWS::Partition>:ssm:<Ref:AWS::Region>:<Ref:AWS::AccountId>:parameter<Ref:PolicyParameter\w+>`

// TestPolicyParameter: the stack stores the default run-time policy
// document, valid against the schema, and only hashcheck (job deadline) and
// classify (routing rules) are told its name and may read it, with the
// backfill state machine (its ReadPolicy task, for the Map's concurrency)
// and nothing else; the name is a stack output for `geomigrate policy put`.
func TestPolicyParameter(t *testing.T) {
	b := defaultStack(t)
	_, p := b.one(t, "AWS::SSM::Parameter", "PolicyParameter")
	if p["Name"] != PolicyParameterName || p["Type"] != "String" || p["Tier"] != "Standard" {
		t.Errorf("parameter %s", js(p))
	}
	value, _ := p["Value"].(string)
	doc, err := policy.Parse([]byte(value))
	if err != nil {
		t.Fatalf("stored document: %v", err)
	}
	if !bytes.Equal(doc.JSON(), policy.Default().JSON()) {
		t.Errorf("stored document is not the default:\n%s", value)
	}
	re := regexp.MustCompile("^" + policyGrant + "$")
	for _, name := range FunctionNames {
		id := strings.ToUpper(name[:1]) + name[1:]
		_, fn := b.one(t, "AWS::Lambda::Function", id+"Function")
		env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
		reads := name == "hashcheck" || name == "classify"
		want := ""
		if reads {
			want = PolicyParameterName
		}
		if env["GEOMIGRATE_POLICY_PARAMETER"] != want {
			t.Errorf("%s: GEOMIGRATE_POLICY_PARAMETER = %v, want %q", name, env["GEOMIGRATE_POLICY_PARAMETER"], want)
		}
		granted := slices.ContainsFunc(grants(b.statements(t, id+"Role")), re.MatchString)
		if granted != reads {
			t.Errorf("%s: may read the policy parameter: %v, want %v", name, granted, reads)
		}
	}
	for _, role := range []string{"BackfillStateMachineRole", "MigrateStateMachineRole"} {
		granted := slices.ContainsFunc(grants(b.statements(t, role)), re.MatchString)
		if want := role == "BackfillStateMachineRole"; granted != want {
			t.Errorf("%s: may read the policy parameter: %v, want %v", role, granted, want)
		}
	}
	for _, g := range grants(b.statements(t, "BackfillStateMachineRole")) {
		if strings.HasPrefix(g, "ssm:") && !re.MatchString(g) {
			t.Errorf("BackfillStateMachineRole: SSM grant beyond the policy parameter: %s", g)
		}
	}
	_, backfill := definition(t, b, "BackfillStateMachine")
	read, _ := backfill["States"].(map[string]any)["ReadPolicy"].(map[string]any)
	name, _ := read["Parameters"].(map[string]any)["Name"].(string)
	if read["Resource"] != statemachine.ResourceSSMGetParameter || !regexp.MustCompile(`^<Ref:PolicyParameter\w+>$`).MatchString(name) {
		t.Errorf("backfill ReadPolicy reads %v %q, want the policy parameter", read["Resource"], name)
	}
	b.template.HasOutput(jsii.String("PolicyParameterName"), map[string]any{"Value": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("PolicyParameter.*"))}})
}

func (b *built) statementsOf(p map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range p["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

func TestCdkNagAwsSolutions(t *testing.T) {
	b := defaultStack(t)
	ann := assertions.Annotations_FromStack(b.st.Stack)
	errs := ann.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, e := range *errs {
		//lint:ignore SA1019 awscdk v2.276's assertions still return cxapi.SynthesisMessage; its replacement is not in the Go bindings
		t.Errorf("unsuppressed cdk-nag error at %s: %v", *e.Id, e.Entry.Data)
	}
	// Every suppression carries a reason (cdk-nag requires >= 10 characters; we want a sentence).
	n := 0
	for id, r := range b.tpl["Resources"].(map[string]any) {
		md, _ := r.(map[string]any)["Metadata"].(map[string]any)
		nag, _ := md["cdk_nag"].(map[string]any)
		rules, _ := nag["rules_to_suppress"].([]any)
		for _, rule := range rules {
			rm := rule.(map[string]any)
			n++
			if reason, _ := rm["reason"].(string); len(strings.Fields(reason)) < 6 {
				t.Errorf("%s: suppression %v has no real reason: %q", id, rm["id"], reason)
			}
		}
	}
	if n == 0 {
		t.Error("no suppressions found in metadata: is cdk-nag wired in?")
	}
	t.Logf("%d cdk-nag suppressions, all with reasons", n)
}

// layerManifestGDAL is the GDAL version the layer manifest promises: every
// function must put it in the recipe (GEOMIGRATE_ENGINE_VERSION).
func layerManifestGDAL(t *testing.T) string {
	t.Helper()
	v, err := layerGDALVersion(filepath.Join(repoRoot(t), "layers", "gdal", "manifest.json"))
	if err != nil || v == "" {
		t.Fatalf("layer manifest GDAL version: %q, %v", v, err)
	}
	return v
}

// TestExecutionEndedRule: the migrate state machine's FAILED / TIMED_OUT / ABORTED executions,
// and only its, reach executionfailed, with the events DLQ behind the target; the function knows
// the dead-letter queue and the state machine.
func TestExecutionEndedRule(t *testing.T) {
	b := defaultStack(t)
	smID, _ := b.one(t, "AWS::StepFunctions::StateMachine", "MigrateStateMachine")
	fnID, fn := b.one(t, "AWS::Lambda::Function", "ExecutionfailedFunction")
	dlqID, _ := b.one(t, "AWS::SQS::Queue", "EventsDLQ")
	deadLetterID, _ := b.one(t, "AWS::SQS::Queue", "DeadLetterQueue")
	must(t, "execution ended rule", func() {
		b.template.HasResourceProperties(jsii.String("AWS::Events::Rule"), &map[string]any{
			"EventPattern": map[string]any{
				"source":      []any{"aws.states"},
				"detail-type": []any{"Step Functions Execution Status Change"},
				"detail": map[string]any{
					"status":          []any{"FAILED", "TIMED_OUT", "ABORTED"},
					"stateMachineArn": []any{map[string]any{"Ref": smID}},
				},
			},
			"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
				"Arn":              map[string]any{"Fn::GetAtt": []any{fnID, "Arn"}},
				"DeadLetterConfig": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{dlqID, "Arn"}}},
			})},
		})
	})
	env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	if got := render(env["GEOMIGRATE_DEAD_LETTER_QUEUE_URL"]); got != "<Ref:"+deadLetterID+">" {
		t.Errorf("GEOMIGRATE_DEAD_LETTER_QUEUE_URL = %s", got)
	}
	if got := render(env["GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN"]); !strings.HasSuffix(got, ":stateMachine:geomigrate-migrate") {
		t.Errorf("GEOMIGRATE_MIGRATE_STATE_MACHINE_ARN = %s", got)
	}
	// EventBridge may invoke the function (a resource policy scoped to this rule).
	found := false
	for _, r := range b.resources("AWS::Lambda::Permission") {
		p := js(r["Properties"])
		if strings.Contains(p, fnID) && strings.Contains(p, "events.amazonaws.com") && strings.Contains(p, "MigrateExecutionEndedRule") {
			found = true
		}
	}
	if !found {
		t.Error("no lambda:InvokeFunction permission for the execution ended rule")
	}
}

// TestRecipeContext: the recipe context value reaches every function as
// GEOMIGRATE_RECIPE, and hashcheck (the one that reads it) may read that
// object or parameter alone; a malformed value is refused at synth.
func TestRecipeContext(t *testing.T) {
	for _, tc := range []struct {
		recipe, grant string
	}{
		{"s3://config-bucket/recipes/archive.yaml", `s3:GetObject on arn:<Ref:AWS::Partition>:s3:::config-bucket/recipes/archive.yaml`},
		{"ssm:/geomigrate/recipe:3", `ssm:GetParameter on arn:<Ref:AWS::Partition>:ssm:<Ref:AWS::Region>:<Ref:AWS::AccountId>:parameter/geomigrate/recipe`},
	} {
		t.Run(tc.recipe, func(t *testing.T) {
			b := synth(t, map[string]any{"recipe": tc.recipe})
			_, fn := b.one(t, "AWS::Lambda::Function", "HashcheckFunction")
			env := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
			if env["GEOMIGRATE_RECIPE"] != tc.recipe {
				t.Errorf("GEOMIGRATE_RECIPE = %v, want %s", env["GEOMIGRATE_RECIPE"], tc.recipe)
			}
			if g := grants(b.statements(t, "HashcheckRole")); !slices.Contains(g, tc.grant) {
				t.Errorf("hashcheck grants lack %q:\n%s", tc.grant, strings.Join(g, "\n"))
			}
			for _, role := range []string{"ConvertRole", "PromoteRole", "ClassifyRole"} {
				for _, g := range grants(b.statements(t, role)) {
					if strings.Contains(g, "recipe") {
						t.Errorf("%s may read the recipe: %s", role, g)
					}
				}
			}
		})
	}
	for _, bad := range []string{"s3://bucket-only", "https://example.com/r.yaml", "ssm:", "s3://b/recipes/*"} {
		if _, _, err := recipeResource(bad); err == nil {
			t.Errorf("recipe %q accepted", bad)
		}
	}
}

// TestBackfillCanRedriveItsMapRun: redriving a backfill execution
// redrives its Distributed Map's failed children, which needs
// states:RedriveExecution on them (docs/decisions/0102).
func TestBackfillCanRedriveItsMapRun(t *testing.T) {
	b := defaultStack(t)
	want := "states:RedriveExecution on arn:<Ref:AWS::Partition>:states:<Ref:AWS::Region>:<Ref:AWS::AccountId>:execution:geomigrate-backfill/*"
	for _, g := range grants(b.statements(t, "BackfillStateMachineRole")) {
		if g == want {
			return
		}
	}
	t.Errorf("the backfill role lacks %s", want)
}
