//go:build integration

package main

// A local deploy rehearsal: the synthesized stack created by moto's CloudFormation (moto_server
// 5.2.1, GEOMIGRATE_MOTO_ENDPOINT), the way `cdk deploy` creates it on AWS, then what exists is
// checked through each service's own API. `make rehearse` runs it (and starts moto_server when
// the variable is unset); docs/deploy.md ("Deploy rehearsal") says what it proves and what not.
//
// The CDK CLI's part is played here, step for step:
//   - `cdk bootstrap`: the asset bucket cdk-hnb659fds-assets-<account>-<region> and the SSM
//     parameter /cdk-bootstrap/hnb659fds/version that the template's BootstrapVersion reads;
//   - `cdk-assets publish`: every file asset of <stack>.assets.json uploaded to its destination
//     (directories zipped, as packaging "zip" says), the template itself included;
//   - `CreateStack` with the template's S3 URL (it is over TemplateBody's 51,200-byte limit).
// moto runs a custom resource's Lambda in Docker, which this machine lacks, so the test does
// what CDK's BucketNotificationsHandler does for Custom::S3BucketNotifications (it puts the
// template's NotificationConfiguration on the bucket) and answers SUCCESS at moto's
// cfnresponse URL, as the handler would.

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/geomigrate/geomigrate/infra/samenv"
)

// motoUnsupported are the template's resource types moto 5.2.1's CloudFormation does not create
// (it logs "No Moto CloudFormation support for <type>" and leaves them out of the stack). Any
// other type missing after the create fails the test: add it here and to docs/deploy.md only
// after checking moto's log says the same.
var motoUnsupported = map[string]bool{
	"AWS::S3::BucketPolicy":  true,
	"AWS::SQS::QueuePolicy":  true,
	"AWS::SNS::TopicPolicy":  true,
	"AWS::CloudWatch::Alarm": true,
}

const rehearsalRegion = "us-east-1"

// motoNoPhysicalID are the types moto 5.2.1 creates without a physical ID: a layer version
// (checkFunctionsAndRoles lists the layer instead) and a Lambda permission (the EventBridge
// rule's right to invoke executionfailed; checkRule checks the rule's targets).
var motoNoPhysicalID = map[string]bool{"AWS::Lambda::LayerVersion": true, "AWS::Lambda::Permission": true}

type rehearsal struct {
	t         *testing.T
	ctx       context.Context
	endpoint  string
	account   string
	creds     aws.Credentials
	cfg       aws.Config
	stack     string
	dir       string // cloud assembly
	template  map[string]any
	resources map[string]string // logical ID → physical ID, after the create
}

func TestDeployRehearsalOnMoto(t *testing.T) {
	endpoint := os.Getenv("GEOMIGRATE_MOTO_ENDPOINT")
	if endpoint == "" {
		t.Skip("GEOMIGRATE_MOTO_ENDPOINT is not set: `make rehearse` starts moto_server and sets it")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// moto keys its backends by account and reads the account from the x-moto-account-id header
	// (moto/core/responses.py get_current_account): a fresh account per run keeps this stack
	// apart from whatever else shares the server, and lets the rehearsal run again on it.
	n, err := rand.Int(rand.Reader, big.NewInt(8e11))
	if err != nil {
		t.Fatal(err)
	}
	account := fmt.Sprintf("%012d", n.Int64()+1e11)
	creds := aws.Credentials{AccessKeyID: account, SecretAccessKey: "rehearsal", Source: "rehearsal"}
	r := &rehearsal{t: t, ctx: ctx, endpoint: strings.TrimRight(endpoint, "/"), account: account, creds: creds,
		cfg: aws.Config{
			Region:       rehearsalRegion,
			Credentials:  credentials.StaticCredentialsProvider{Value: creds},
			BaseEndpoint: aws.String(strings.TrimRight(endpoint, "/")),
			APIOptions:   []func(*middleware.Stack) error{smithyhttp.AddHeaderValue("x-moto-account-id", account)},
		}}

	r.synthesize()
	r.bootstrap()
	r.publishAssets()
	r.createStack()
	r.checkStackResources()
	r.checkBuckets()
	r.checkTable()
	r.checkQueues()
	r.checkFunctionsAndRoles()
	r.checkStateMachines()
	r.checkRule()
	r.checkSAMEnvMatchesCloudFormation()
}

// synthesize writes the cloud assembly as `cdk synth` does (placeholder assets: nothing is built).
func (r *rehearsal) synthesize() {
	r.t.Helper()
	app, st, assets, err := NewApp(baseContext(r.t))
	if err != nil {
		r.t.Fatal(err)
	}
	builtMu.Lock()
	builtAssets = append(builtAssets, assets)
	builtMu.Unlock()
	asm := app.Synth(nil)
	r.dir = *asm.Directory()
	r.stack = *st.Stack.StackName()
	b, err := os.ReadFile(filepath.Join(r.dir, r.stack+".template.json"))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.template); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rehearsal) assetBucket() string {
	return fmt.Sprintf("cdk-hnb659fds-assets-%s-%s", r.account, rehearsalRegion)
}

// bootstrap creates what `cdk bootstrap` would and the template relies on.
func (r *rehearsal) bootstrap() {
	r.t.Helper()
	s3c := s3.NewFromConfig(r.cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(r.ctx, &s3.CreateBucketInput{Bucket: aws.String(r.assetBucket())}); err != nil {
		r.t.Fatalf("bootstrap: asset bucket: %v", err)
	}
	if _, err := ssm.NewFromConfig(r.cfg).PutParameter(r.ctx, &ssm.PutParameterInput{
		Name: aws.String("/cdk-bootstrap/hnb659fds/version"), Value: aws.String("30"),
		Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
	}); err != nil {
		r.t.Fatalf("bootstrap: version parameter: %v", err)
	}
}

// publishAssets uploads every file asset of the assets manifest to its destination.
func (r *rehearsal) publishAssets() {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, r.stack+".assets.json"))
	if err != nil {
		r.t.Fatal(err)
	}
	var manifest struct {
		Files map[string]struct {
			Source struct {
				Path      string `json:"path"`
				Packaging string `json:"packaging"`
			} `json:"source"`
			Destinations map[string]struct {
				BucketName string `json:"bucketName"`
				ObjectKey  string `json:"objectKey"`
			} `json:"destinations"`
		} `json:"files"`
		DockerImages map[string]any `json:"dockerImages"`
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		r.t.Fatal(err)
	}
	// The convert container's image is the one Docker image asset: it is built and pushed at
	// deploy (Docker, the bootstrap's ECR repository); moto's ECS records the image name without
	// pulling it, so the task definition is created all the same. Any other image fails here.
	if len(manifest.DockerImages) > 1 {
		r.t.Fatalf("the stack has %d Docker image assets, want only the convert container's: %v", len(manifest.DockerImages), manifest.DockerImages)
	}
	for hash := range manifest.DockerImages {
		r.t.Logf("Docker image asset %s (the convert container) not published: built at deploy", hash)
	}
	s3c := s3.NewFromConfig(r.cfg, func(o *s3.Options) { o.UsePathStyle = true })
	sub := strings.NewReplacer("${AWS::AccountId}", r.account, "${AWS::Region}", rehearsalRegion, "${AWS::Partition}", "aws")
	for id, f := range manifest.Files {
		src := filepath.Join(r.dir, f.Source.Path)
		var body []byte
		switch f.Source.Packaging {
		case "zip":
			body, err = zipDir(src)
		case "file":
			body, err = os.ReadFile(src)
		default:
			err = fmt.Errorf("packaging %q", f.Source.Packaging)
		}
		if err != nil {
			r.t.Fatalf("asset %s: %v", id, err)
		}
		for _, d := range f.Destinations {
			bucket, key := sub.Replace(d.BucketName), sub.Replace(d.ObjectKey)
			if _, err := s3c.PutObject(r.ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)}); err != nil {
				r.t.Fatalf("asset %s → s3://%s/%s: %v", id, bucket, key, err)
			}
		}
	}
}

func zipDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		h.Name, h.Method = filepath.ToSlash(rel), zip.Deflate
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	return buf.Bytes(), err
}

func (r *rehearsal) createStack() {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, r.stack+".template.json"))
	if err != nil {
		r.t.Fatal(err)
	}
	key := fmt.Sprintf("%x.json", sha256.Sum256(b))
	s3c := s3.NewFromConfig(r.cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3c.PutObject(r.ctx, &s3.PutObjectInput{Bucket: aws.String(r.assetBucket()), Key: &key, Body: bytes.NewReader(b)}); err != nil {
		r.t.Fatal(err)
	}
	cfn := cloudformation.NewFromConfig(r.cfg)
	start := time.Now()
	out, err := cfn.CreateStack(r.ctx, &cloudformation.CreateStackInput{
		StackName:    &r.stack,
		TemplateURL:  aws.String(fmt.Sprintf("https://%s.s3.amazonaws.com/%s", r.assetBucket(), key)),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityNamedIam},
	})
	if err != nil {
		r.t.Fatalf("CreateStack: %v", err)
	}
	r.answerCustomResources(*out.StackId)
	for {
		d, err := cfn.DescribeStacks(r.ctx, &cloudformation.DescribeStacksInput{StackName: out.StackId})
		if err != nil {
			r.t.Fatal(err)
		}
		s := d.Stacks[0]
		if s.StackStatus == cfntypes.StackStatusCreateComplete {
			r.t.Logf("stack %s CREATE_COMPLETE in %s (account %s)", r.stack, time.Since(start).Round(time.Millisecond), r.account)
			if len(s.Outputs) == 0 {
				r.t.Error("the stack has no outputs")
			}
			break
		}
		if !strings.HasSuffix(string(s.StackStatus), "_IN_PROGRESS") || time.Since(start) > time.Minute {
			r.t.Fatalf("stack status %s: %s", s.StackStatus, aws.ToString(s.StackStatusReason))
		}
		time.Sleep(200 * time.Millisecond)
	}
	res, err := cfn.DescribeStackResources(r.ctx, &cloudformation.DescribeStackResourcesInput{StackName: out.StackId})
	if err != nil {
		r.t.Fatal(err)
	}
	r.resources = map[string]string{}
	for _, sr := range res.StackResources {
		if sr.LogicalResourceId == nil {
			continue // moto lists the resources it skipped without IDs
		}
		noID := aws.ToString(sr.PhysicalResourceId) == "" && !motoNoPhysicalID[aws.ToString(sr.ResourceType)]
		if sr.ResourceStatus != cfntypes.ResourceStatusCreateComplete || noID {
			r.t.Errorf("%s (%s): %s, physical ID %q", *sr.LogicalResourceId, aws.ToString(sr.ResourceType), sr.ResourceStatus, aws.ToString(sr.PhysicalResourceId))
		}
		r.resources[*sr.LogicalResourceId] = aws.ToString(sr.PhysicalResourceId)
	}
}

// answerCustomResources plays the custom resources' handlers (moto would run them in Docker).
func (r *rehearsal) answerCustomResources(stackID string) {
	r.t.Helper()
	cfn := cloudformation.NewFromConfig(r.cfg)
	res, err := cfn.DescribeStackResources(r.ctx, &cloudformation.DescribeStackResourcesInput{StackName: &stackID})
	if err != nil {
		r.t.Fatal(err)
	}
	physical := map[string]string{}
	for _, sr := range res.StackResources {
		if sr.LogicalResourceId != nil {
			physical[*sr.LogicalResourceId] = aws.ToString(sr.PhysicalResourceId)
		}
	}
	for id, v := range r.template["Resources"].(map[string]any) {
		res := v.(map[string]any)
		typ, _ := res["Type"].(string)
		if !strings.HasPrefix(typ, "Custom::") && typ != "AWS::CloudFormation::CustomResource" {
			continue
		}
		if typ != "Custom::S3BucketNotifications" {
			r.t.Fatalf("custom resource %s (%s): the rehearsal knows only CDK's Custom::S3BucketNotifications", id, typ)
		}
		props := res["Properties"].(map[string]any)
		bucketRef, _ := props["BucketName"].(map[string]any)["Ref"].(string)
		bucket := physical[bucketRef]
		if bucket == "" {
			r.t.Fatalf("%s: bucket %s not created", id, bucketRef)
		}
		// What the handler does with Managed=true: put the configuration as given.
		nc, _ := props["NotificationConfiguration"].(map[string]any)
		cfg := &s3types.NotificationConfiguration{}
		if _, ok := nc["EventBridgeConfiguration"]; ok {
			cfg.EventBridgeConfiguration = &s3types.EventBridgeConfiguration{}
		}
		for k := range nc {
			if k != "EventBridgeConfiguration" {
				r.t.Fatalf("%s: notification configuration %s is not played by the rehearsal", id, k)
			}
		}
		s3c := s3.NewFromConfig(r.cfg, func(o *s3.Options) { o.UsePathStyle = true })
		if _, err := s3c.PutBucketNotificationConfiguration(r.ctx, &s3.PutBucketNotificationConfigurationInput{
			Bucket: &bucket, NotificationConfiguration: cfg,
		}); err != nil {
			r.t.Fatalf("%s: %v", id, err)
		}
		r.respond(stackID, id)
	}
}

// respond sends a custom resource's SUCCESS to moto's cfnresponse URL, signed for our account.
func (r *rehearsal) respond(stackID, logicalID string) {
	r.t.Helper()
	body, _ := json.Marshal(map[string]any{
		"Status": "SUCCESS", "StackId": stackID, "LogicalResourceId": logicalID,
		"PhysicalResourceId": logicalID, "RequestId": "rehearsal", "Data": map[string]any{},
	})
	u := fmt.Sprintf("%s/cloudformation_%s/cfnresponse?stack=%s", r.endpoint, rehearsalRegion, url.QueryEscape(stackID))
	req, err := http.NewRequestWithContext(r.ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("x-moto-account-id", r.account)
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(r.ctx, r.creds, req, hex.EncodeToString(sum[:]), "cloudformation", rehearsalRegion, time.Now()); err != nil {
		r.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("cfnresponse for %s: HTTP %d", logicalID, resp.StatusCode)
	}
}

func (r *rehearsal) ofType(typ string) []string {
	var ids []string
	for id, v := range r.template["Resources"].(map[string]any) {
		if v.(map[string]any)["Type"] == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (r *rehearsal) physical(prefix string) string {
	r.t.Helper()
	var found []string
	for id, p := range r.resources {
		if samenv.ConstructID(id) == prefix {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		r.t.Fatalf("want one created resource %s*, got %v", prefix, found)
	}
	return found[0]
}

// Every template resource is in the stack, except the types moto does not model (listed).
func (r *rehearsal) checkStackResources() {
	r.t.Helper()
	skipped := map[string][]string{}
	for id, v := range r.template["Resources"].(map[string]any) {
		typ := v.(map[string]any)["Type"].(string)
		if _, ok := r.resources[id]; ok {
			if motoUnsupported[typ] {
				r.t.Logf("moto now creates %s (%s): drop it from motoUnsupported and docs/deploy.md", typ, id)
			}
			continue
		}
		if !motoUnsupported[typ] {
			r.t.Errorf("%s (%s) was not created", id, typ)
		}
		skipped[typ] = append(skipped[typ], id)
	}
	var lines []string
	for typ, ids := range skipped {
		lines = append(lines, fmt.Sprintf("%s ×%d", typ, len(ids)))
	}
	sort.Strings(lines)
	r.t.Logf("created %d resources; not modelled by moto: %s", len(r.resources), strings.Join(lines, ", "))
}

func (r *rehearsal) checkBuckets() {
	r.t.Helper()
	s3c := s3.NewFromConfig(r.cfg, func(o *s3.Options) { o.UsePathStyle = true })
	out, err := s3c.ListBuckets(r.ctx, &s3.ListBucketsInput{})
	if err != nil {
		r.t.Fatal(err)
	}
	have := map[string]bool{}
	for _, b := range out.Buckets {
		have[aws.ToString(b.Name)] = true
	}
	ids := r.ofType("AWS::S3::Bucket")
	if len(ids) != 4 {
		r.t.Errorf("template has %d buckets, want source, destination, ops and access logs", len(ids))
	}
	for _, id := range ids {
		if !have[r.resources[id]] {
			r.t.Errorf("bucket %s (%s) not listed", r.resources[id], id)
		}
	}
	// Of a bucket's properties moto's CloudFormation applies BucketEncryption (and Tags) only;
	// versioning, lifecycle rules, public access block, logging and inventory are not modelled.
	for _, id := range ids {
		name := r.resources[id]
		enc, err := s3c.GetBucketEncryption(r.ctx, &s3.GetBucketEncryptionInput{Bucket: &name})
		if err != nil || enc.ServerSideEncryptionConfiguration == nil || len(enc.ServerSideEncryptionConfiguration.Rules) != 1 ||
			enc.ServerSideEncryptionConfiguration.Rules[0].ApplyServerSideEncryptionByDefault.SSEAlgorithm != s3types.ServerSideEncryptionAes256 {
			r.t.Errorf("bucket %s (%s): want SSE-S3 by default, got %+v (%v)", name, id, enc, err)
		}
	}
}

func (r *rehearsal) checkTable() {
	r.t.Helper()
	name := r.physical("StateTable")
	out, err := dynamodb.NewFromConfig(r.cfg).DescribeTable(r.ctx, &dynamodb.DescribeTableInput{TableName: &name})
	if err != nil {
		r.t.Fatalf("state table %s: %v", name, err)
	}
	tb := out.Table
	if len(tb.KeySchema) != 1 || aws.ToString(tb.KeySchema[0].AttributeName) != "pk" {
		r.t.Errorf("state table key schema %+v", tb.KeySchema)
	}
	if tb.BillingModeSummary == nil || tb.BillingModeSummary.BillingMode != "PAY_PER_REQUEST" {
		r.t.Errorf("state table billing %+v", tb.BillingModeSummary)
	}
	gsi := false
	for _, g := range tb.GlobalSecondaryIndexes {
		gsi = gsi || aws.ToString(g.IndexName) == "status-shard-index"
	}
	if !gsi {
		r.t.Error("state table has no status-shard-index")
	}
}

func (r *rehearsal) checkQueues() {
	r.t.Helper()
	c := sqs.NewFromConfig(r.cfg)
	out, err := c.ListQueues(r.ctx, &sqs.ListQueuesInput{})
	if err != nil {
		r.t.Fatal(err)
	}
	byName := map[string]string{}
	for _, u := range out.QueueUrls {
		byName[u[strings.LastIndex(u, "/")+1:]] = u
	}
	for _, id := range r.ofType("AWS::SQS::Queue") {
		ref := r.resources[id]
		name := ref[strings.LastIndex(ref, "/")+1:]
		if byName[name] == "" {
			r.t.Errorf("queue %s (%s) not listed", name, id)
		}
	}
	for _, q := range []struct{ queue, dlq string }{{"RemediationQueue", "RemediationRedriveDLQ"}, {"DeadLetterQueue", "DeadLetterRedriveDLQ"}} {
		ref := r.physical(q.queue)
		a, err := c.GetQueueAttributes(r.ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(byName[ref[strings.LastIndex(ref, "/")+1:]]), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			r.t.Errorf("%s: %v", q.queue, err)
			continue
		}
		var rp struct {
			DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
			MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
		}
		_ = json.Unmarshal([]byte(a.Attributes["RedrivePolicy"]), &rp)
		dlq := r.physical(q.dlq)
		if !strings.HasSuffix(rp.DeadLetterTargetArn, ":"+dlq[strings.LastIndex(dlq, "/")+1:]) || strings.Trim(string(rp.MaxReceiveCount), `"`) != "5" {
			r.t.Errorf("%s redrive policy %q, want %s after 5 receives", q.queue, a.Attributes["RedrivePolicy"], dlq)
		}
		if a.Attributes["MessageRetentionPeriod"] != "1209600" {
			r.t.Errorf("%s retention %s s, want 14 days", q.queue, a.Attributes["MessageRetentionPeriod"])
		}
	}
}

func (r *rehearsal) checkFunctionsAndRoles() {
	r.t.Helper()
	lc := lambda.NewFromConfig(r.cfg)
	ic := iam.NewFromConfig(r.cfg)
	table, dst := r.physical("StateTable"), r.physical("DestinationBucket")
	for _, name := range FunctionNames {
		id := strings.ToUpper(name[:1]) + name[1:] + "Function"
		fnName := r.physical(id)
		out, err := lc.GetFunction(r.ctx, &lambda.GetFunctionInput{FunctionName: &fnName})
		if err != nil {
			r.t.Errorf("%s: %v", id, err)
			continue
		}
		c := out.Configuration
		if c.Runtime != "provided.al2023" || aws.ToString(c.Handler) != "bootstrap" {
			r.t.Errorf("%s: runtime %s handler %s", id, c.Runtime, aws.ToString(c.Handler))
		}
		env := c.Environment.Variables
		if env["GEOMIGRATE_STATE_TABLE"] != table || env["GEOMIGRATE_DEST_BUCKET"] != dst {
			r.t.Errorf("%s: GEOMIGRATE_STATE_TABLE=%q GEOMIGRATE_DEST_BUCKET=%q, want the created %q and %q",
				id, env["GEOMIGRATE_STATE_TABLE"], env["GEOMIGRATE_DEST_BUCKET"], table, dst)
		}
		role := aws.ToString(c.Role)
		if _, err := ic.GetRole(r.ctx, &iam.GetRoleInput{RoleName: aws.String(role[strings.LastIndex(role, "/")+1:])}); err != nil {
			r.t.Errorf("%s: role %s: %v", id, role, err)
		}
	}
	layers, err := lc.ListLayers(r.ctx, &lambda.ListLayersInput{})
	if err != nil || len(layers.Layers) != 1 {
		r.t.Errorf("want the GDAL layer, got %v %v", layers, err)
	}
	roles, err := ic.ListRoles(r.ctx, &iam.ListRolesInput{})
	if err != nil || len(roles.Roles) != len(r.ofType("AWS::IAM::Role")) {
		r.t.Errorf("roles: %d listed, template has %d (%v)", len(roles.Roles), len(r.ofType("AWS::IAM::Role")), err)
	}
}

var lambdaArn = regexp.MustCompile(`arn:aws:lambda:[a-z0-9-]+:\d{12}:function:([A-Za-z0-9_-]+)`)

// The definitions reached moto with every placeholder replaced by a created resource.
func (r *rehearsal) checkStateMachines() {
	r.t.Helper()
	c := sfn.NewFromConfig(r.cfg)
	lc := lambda.NewFromConfig(r.cfg)
	for _, id := range r.ofType("AWS::StepFunctions::StateMachine") {
		arn := r.resources[id]
		out, err := c.DescribeStateMachine(r.ctx, &sfn.DescribeStateMachineInput{StateMachineArn: &arn})
		if err != nil {
			r.t.Errorf("%s: %v", id, err)
			continue
		}
		def := aws.ToString(out.Definition)
		var doc map[string]any
		if err := json.Unmarshal([]byte(def), &doc); err != nil || doc["States"] == nil {
			r.t.Errorf("%s: definition is not a state machine: %v", id, err)
		}
		if strings.Contains(def, "${") {
			r.t.Errorf("%s: definition still has a ${placeholder}", id)
		}
		for _, m := range lambdaArn.FindAllStringSubmatch(def, -1) {
			if _, err := lc.GetFunction(r.ctx, &lambda.GetFunctionInput{FunctionName: aws.String(m[1])}); err != nil {
				r.t.Errorf("%s names function %s, which does not exist: %v", id, m[1], err)
			}
		}
	}
	migrate := r.physical("MigrateStateMachine")
	out, err := c.DescribeStateMachine(r.ctx, &sfn.DescribeStateMachineInput{StateMachineArn: &migrate})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, q := range []string{"RemediationQueue", "DeadLetterQueue"} {
		if !strings.Contains(aws.ToString(out.Definition), r.physical(q)) {
			r.t.Errorf("migrate definition does not send to the created %s (%s)", q, r.physical(q))
		}
	}
	if len(lambdaArn.FindAllString(aws.ToString(out.Definition), -1)) == 0 {
		r.t.Error("migrate definition invokes no Lambda function")
	}
}

func (r *rehearsal) checkRule() {
	r.t.Helper()
	c := eventbridge.NewFromConfig(r.cfg)
	for _, id := range r.ofType("AWS::Events::Rule") {
		name := r.resources[id]
		name = name[strings.LastIndex(name, "/")+1:]
		rule, err := c.DescribeRule(r.ctx, &eventbridge.DescribeRuleInput{Name: &name})
		if err != nil {
			r.t.Errorf("rule %s: %v", id, err)
			continue
		}
		switch samenv.ConstructID(id) {
		case "SourceObjectCreatedRule":
		case "MigrateExecutionEndedRule":
			r.checkExecutionEndedRule(c, id, name, aws.ToString(rule.EventPattern))
			continue
		default:
			continue
		}
		var pattern struct {
			Detail struct {
				Bucket struct {
					Name []string `json:"name"`
				} `json:"bucket"`
			} `json:"detail"`
		}
		if err := json.Unmarshal([]byte(aws.ToString(rule.EventPattern)), &pattern); err != nil ||
			len(pattern.Detail.Bucket.Name) != 1 || pattern.Detail.Bucket.Name[0] != r.physical("SourceBucket") {
			r.t.Errorf("rule %s pattern %s: want the created source bucket %s", id, aws.ToString(rule.EventPattern), r.physical("SourceBucket"))
		}
		targets, err := c.ListTargetsByRule(r.ctx, &eventbridge.ListTargetsByRuleInput{Rule: &name})
		if err != nil || len(targets.Targets) != 1 || aws.ToString(targets.Targets[0].Arn) != r.physical("MigrateStateMachine") {
			r.t.Errorf("rule %s targets %+v (%v), want the migrate state machine %s", id, targets, err, r.physical("MigrateStateMachine"))
		}
	}
}

// checkExecutionEndedRule: the rule that closes jobs of failed, timed-out or aborted executions
// matches the created migrate state machine only and targets the executionfailed function.
func (r *rehearsal) checkExecutionEndedRule(c *eventbridge.Client, id, name, eventPattern string) {
	r.t.Helper()
	var pattern struct {
		Source []string `json:"source"`
		Detail struct {
			StateMachineArn []string `json:"stateMachineArn"`
			Status          []string `json:"status"`
		} `json:"detail"`
	}
	migrate := r.physical("MigrateStateMachine")
	if err := json.Unmarshal([]byte(eventPattern), &pattern); err != nil ||
		len(pattern.Source) != 1 || pattern.Source[0] != "aws.states" ||
		len(pattern.Detail.StateMachineArn) != 1 || pattern.Detail.StateMachineArn[0] != migrate ||
		len(pattern.Detail.Status) != 3 {
		r.t.Errorf("rule %s pattern %s: want aws.states events of %s with 3 statuses", id, eventPattern, migrate)
	}
	fn := r.physical("ExecutionfailedFunction")
	targets, err := c.ListTargetsByRule(r.ctx, &eventbridge.ListTargetsByRuleInput{Rule: &name})
	if err != nil || len(targets.Targets) != 1 || !strings.HasSuffix(aws.ToString(targets.Targets[0].Arn), ":function:"+fn) {
		r.t.Errorf("rule %s targets %+v (%v), want the executionfailed function %s", id, targets, err, fn)
	}
}

// The --env-vars file `make sam-invoke` writes from a deployed stack's resources
// (SAM_STACK_RESOURCES) must hold what CloudFormation itself gave the functions.
func (r *rehearsal) checkSAMEnvMatchesCloudFormation() {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, r.stack+".template.json"))
	if err != nil {
		r.t.Fatal(err)
	}
	tpl, err := samenv.Parse(b)
	if err != nil {
		r.t.Fatal(err)
	}
	res, err := tpl.Resolve(samenv.Names{Region: rehearsalRegion, Account: r.account, StackName: r.stack, Physical: r.resources})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(res.Defaulted) > 0 {
		r.t.Errorf("names defaulted although the stack exists: %v", res.Defaulted)
	}
	lc := lambda.NewFromConfig(r.cfg)
	checked := 0
	for fnID, vars := range res.Env {
		out, err := lc.GetFunctionConfiguration(r.ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(r.resources[fnID])})
		if err != nil {
			r.t.Errorf("%s: %v", fnID, err)
			continue
		}
		for k, v := range vars {
			checked++
			if got := out.Environment.Variables[k]; got != v {
				r.t.Errorf("%s %s: sam-env says %q, CloudFormation gave %q", fnID, k, v, got)
			}
		}
	}
	if checked == 0 {
		r.t.Error("no Ref/GetAtt variable compared")
	}
}
