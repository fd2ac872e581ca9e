package dynamostore

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/breaker/breakertest"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
	"github.com/geomigrate/geomigrate/internal/statestore/statestoretest"
)

// fakeDynamo is an in-memory table that understands exactly the requests
// the backend sends (and fails the test on anything else), so the
// conformance suite runs without a server. Pages hold two items, so paging
// is exercised.
type fakeDynamo struct {
	t       *testing.T
	mu      sync.Mutex
	items   map[string]map[string]types.AttributeValue
	noIndex bool
	queries int
}

const fakePage = 2

func newFake(t *testing.T) *fakeDynamo {
	return &fakeDynamo{t: t, items: map[string]map[string]types.AttributeValue{}}
}

func s(av types.AttributeValue) string {
	if v, ok := av.(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (f *fakeDynamo) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if !aws.ToBool(in.ConsistentRead) {
		f.t.Errorf("GetItem without ConsistentRead")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &dynamodb.GetItemOutput{Item: f.items[s(in.Key["pk"])]}, nil
}

func ccf() error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 400, Header: http.Header{}}}
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}}}}
}

func (f *fakeDynamo) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pk := s(in.Item["pk"])
	cur, exists := f.items[pk]
	switch cond := aws.ToString(in.ConditionExpression); cond {
	case "attribute_not_exists(#pk)":
		if in.ExpressionAttributeNames["#pk"] != "pk" {
			f.t.Errorf("names = %v", in.ExpressionAttributeNames)
		}
		if exists {
			return nil, ccf()
		}
	case "#v = :expect":
		if in.ExpressionAttributeNames["#v"] != "version" {
			f.t.Errorf("names = %v", in.ExpressionAttributeNames)
		}
		want := in.ExpressionAttributeValues[":expect"].(*types.AttributeValueMemberN).Value
		if !exists || cur["version"].(*types.AttributeValueMemberN).Value != want {
			return nil, ccf()
		}
	default:
		f.t.Errorf("unexpected condition %q", cond)
	}
	for k, v := range in.Item {
		if sv, ok := v.(*types.AttributeValueMemberS); ok && sv.Value == "" {
			f.t.Errorf("empty string attribute %s (DynamoDB rejects it in index keys)", k)
		}
	}
	f.items[pk] = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

// page returns the items whose attribute attr is value ("" for all) after
// the exclusive start key, in key order (Scan) or updated_at order (Query).
func (f *fakeDynamo) page(attr, value string, byTime bool, start map[string]types.AttributeValue) ([]map[string]types.AttributeValue, map[string]types.AttributeValue) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []map[string]types.AttributeValue
	for _, it := range f.items {
		if value == "" || s(it[attr]) == value {
			all = append(all, it)
		}
	}
	key := func(it map[string]types.AttributeValue) string {
		if byTime {
			return s(it["updated_at"]) + "\x00" + s(it["pk"])
		}
		return s(it["pk"])
	}
	sort.Slice(all, func(i, j int) bool { return key(all[i]) < key(all[j]) })
	from := 0
	if start != nil {
		sk := key(start)
		for from < len(all) && key(all[from]) <= sk {
			from++
		}
	}
	end := min(from+fakePage, len(all))
	var last map[string]types.AttributeValue
	if end < len(all) {
		last = all[end-1]
	}
	return all[from:end], last
}

func (f *fakeDynamo) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	// The store queries the shards from several goroutines at once.
	f.mu.Lock()
	f.queries++
	f.mu.Unlock()
	if f.noIndex {
		resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 400, Header: http.Header{}}}
		return nil, &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Query", Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &smithy.GenericAPIError{Code: "ValidationException", Message: "The table does not have the specified index: status-shard-index"}}}}
	}
	cond := aws.ToString(in.KeyConditionExpression)
	ranged := cond == "#s = :s AND #u >= :u" && in.ExpressionAttributeNames["#u"] == "updated_at"
	if aws.ToString(in.IndexName) != DefaultStatusIndex || (cond != "#s = :s" && !ranged) || in.ExpressionAttributeNames["#s"] != "status_shard" {
		f.t.Errorf("unexpected query %+v", in)
	}
	items, last := f.page("status_shard", s(in.ExpressionAttributeValues[":s"]), true, in.ExclusiveStartKey)
	if ranged { // the sort key condition, as DynamoDB applies it before paging
		var kept []map[string]types.AttributeValue
		for _, it := range items {
			if s(it["updated_at"]) >= s(in.ExpressionAttributeValues[":u"]) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	return &dynamodb.QueryOutput{Items: items, LastEvaluatedKey: last}, nil
}

func (f *fakeDynamo) Scan(_ context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	status := ""
	keep := func(map[string]types.AttributeValue) bool { return true }
	switch expr := aws.ToString(in.FilterExpression); {
	case expr == "":
	case expr == "#s = :s" && in.ExpressionAttributeNames["#s"] == "status":
		status = s(in.ExpressionAttributeValues[":s"])
	case (expr == "begins_with(#pk, :bp)" || expr == "NOT begins_with(#pk, :bp)") && in.ExpressionAttributeNames["#pk"] == "pk":
		// DynamoDB filters each page after reading it.
		keep = func(it map[string]types.AttributeValue) bool {
			return strings.HasPrefix(s(it["pk"]), s(in.ExpressionAttributeValues[":bp"])) == !strings.HasPrefix(expr, "NOT")
		}
	default:
		f.t.Errorf("unexpected scan %+v", in)
	}
	items, last := f.page("status", status, false, in.ExclusiveStartKey)
	var kept []map[string]types.AttributeValue
	for _, it := range items {
		if keep(it) {
			kept = append(kept, it)
		}
	}
	return &dynamodb.ScanOutput{Items: kept, LastEvaluatedKey: last}, nil
}

func TestConformanceFake(t *testing.T) {
	statestoretest.RunBackendTests(t, func(t *testing.T) statestore.Backend {
		return New(newFake(t), Options{Table: "jobs"})
	})
}

func TestConformanceFakeWithoutIndex(t *testing.T) {
	statestoretest.RunBackendTests(t, func(t *testing.T) statestore.Backend {
		f := newFake(t)
		f.noIndex = true
		b := New(f, Options{Table: "jobs"})
		t.Cleanup(func() {
			if f.queries > 1 {
				t.Errorf("%d queries on a table without the index; the fallback is remembered after one", f.queries)
			}
		})
		return b
	})
}

func TestEncodeLayout(t *testing.T) {
	j := statestoretest.FullJob("ds#sha#recipe")
	j.LeaseUntil = time.Time{}
	j.DestKey = ""
	item, err := Encode(j)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := item["lease_until"]; ok {
		t.Error("zero lease_until encoded")
	}
	if _, ok := item["dest_key"]; ok {
		t.Error("empty dest_key encoded")
	}
	if v := s(item["updated_at"]); v != j.UpdatedAt.UTC().Format(TimeLayout) || len(v) != len("2006-01-02T15:04:05.000000000Z") {
		t.Errorf("updated_at = %q", v)
	}
	if _, ok := item["expires_at"].(*types.AttributeValueMemberN); !ok && j.ExpiresAt != 0 {
		t.Errorf("expires_at = %#v, want a number (TTL)", item["expires_at"])
	}
	back, err := Decode(item)
	if err != nil {
		t.Fatal(err)
	}
	if diff := statestoretest.JobsEqual(back, j); diff != "" {
		t.Errorf("round trip: %s", diff)
	}
	// Fixed width sorts as time: RFC3339Nano would put "…05Z" after "…05.5Z".
	a, _ := encodeTime(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC))
	b, _ := encodeTime(time.Date(2026, 1, 1, 0, 0, 5, 500_000_000, time.UTC))
	c, _ := encodeTime(time.Date(2026, 1, 1, 5, 30, 5, 0, time.FixedZone("IST", 5*3600+1800)))
	if !(s(a) < s(b)) || s(c) != s(a) {
		t.Errorf("time order: %s %s %s", s(a), s(b), s(c))
	}
}

func apiErr(status int, code string) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "Op", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: resp, Err: &smithy.GenericAPIError{Code: code}}}}
}

func TestMapError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ccf(), "conflict"},
		{apiErr(400, "ProvisionedThroughputExceededException"), "transient"},
		{apiErr(400, "ThrottlingException"), "transient"},
		{apiErr(400, "RequestLimitExceeded"), "transient"},
		{apiErr(500, "InternalServerError"), "transient"},
		{apiErr(503, "ServiceUnavailable"), "transient"},
		{apiErr(502, ""), "transient"},
		{apiErr(400, "TransactionConflictException"), "transient"},
		{&smithy.OperationError{Err: &smithy.CanceledError{Err: context.DeadlineExceeded}}, "transient"},
		{apiErr(400, "AccessDeniedException"), "systemic"},
		{apiErr(400, "ResourceNotFoundException"), "systemic"},
		{apiErr(400, "UnrecognizedClientException"), "systemic"},
		{apiErr(400, "ValidationException"), "systemic"},
		{apiErr(400, "UnknownOperationException"), "systemic"},
		{apiErr(400, "ItemCollectionSizeLimitExceededException"), "systemic"},
	} {
		got := MapError("op", tc.err)
		verdict := string(fault.TierOf(got))
		if errors.Is(got, statestore.ErrConflict) {
			verdict = "conflict"
			if fault.TierOf(got) != fault.TierUnknown {
				t.Errorf("conflict carries tier %s", fault.TierOf(got))
			}
		}
		if verdict != tc.want {
			t.Errorf("MapError(%v) = %v (%s), want %s", tc.err, got, verdict, tc.want)
		}
	}
}

// missingTable answers every request as DynamoDB does for a table that
// does not exist.
type missingTable struct{}

func (missingTable) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, apiErr(400, "ResourceNotFoundException")
}
func (missingTable) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return nil, apiErr(400, "ResourceNotFoundException")
}
func (missingTable) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, apiErr(400, "ResourceNotFoundException")
}
func (missingTable) Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return nil, apiErr(400, "ResourceNotFoundException")
}

// TestMissingTableIsSystemicAndNamed: a Lambda whose table is gone raises
// a SystemicError (the state machine's contract name) that says which table.
func TestMissingTableIsSystemicAndNamed(t *testing.T) {
	b := New(missingTable{}, Options{Table: "geomigrate-jobs"})
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Get": func() error { _, err := b.Get(ctx, "j1"); return err },
		"Put": func() error { return b.Put(ctx, statestore.Job{ID: "j1", Status: statestore.Pending}, 0) },
		"List": func() error {
			return b.List(ctx, statestore.Pending, func(statestore.Job) error { return nil })
		},
	} {
		err := call()
		var se *fault.SystemicError
		if !errors.As(err, &se) {
			t.Errorf("%s: %T %v, want *fault.SystemicError", name, err, err)
			continue
		}
		if !strings.Contains(err.Error(), "table geomigrate-jobs") {
			t.Errorf("%s: %q does not name the table", name, err)
		}
	}
}

func TestBreakerConformanceFake(t *testing.T) {
	for _, name := range []string{"index", "scan"} {
		t.Run(name, func(t *testing.T) {
			breakertest.Run(t, func(t *testing.T) breaker.Store {
				f := newFake(t)
				f.noIndex = name == "scan"
				return New(f, Options{Table: "jobs"})
			})
		})
	}
}

// TestBreakersAreNotJobs: breaker items share the job table but no
// listing of jobs returns them.
func TestBreakersAreNotJobs(t *testing.T) {
	ctx := context.Background()
	b := New(newFake(t), Options{Table: "jobs"})
	if err := b.PutBreaker(ctx, breaker.Record{Dependency: "s3:dest", State: breaker.Open, UpdatedAt: time.Now()}, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, statestore.Job{ID: "j1", Status: statestore.Completed, UpdatedAt: time.Now()}, 0); err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := b.List(ctx, "", func(j statestore.Job) error { ids = append(ids, j.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "j1" {
		t.Fatalf("List of every job = %v, want [j1]", ids)
	}
}

// tableScript answers CreateTable and DescribeTable from a script.
type tableScript struct {
	creates   []error
	describes []types.TableStatus // "" answers ResourceNotFoundException
	calls     []string
}

func (s *tableScript) CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	s.calls = append(s.calls, "Create")
	err := s.creates[0]
	s.creates = s.creates[1:]
	return &dynamodb.CreateTableOutput{}, err
}

func (s *tableScript) DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	s.calls = append(s.calls, "Describe")
	st := s.describes[0]
	s.describes = s.describes[1:]
	if st == "" {
		return nil, &smithy.GenericAPIError{Code: "ResourceNotFoundException", Message: "not found"}
	}
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{TableStatus: st}}, nil
}

// TestCreateTableOverATableBeingDeleted: a table of the same name still
// DELETING (a previous test's cleanup) answers ResourceInUse; CreateTable
// creates it again once it is gone instead of waiting for an ACTIVE that
// never comes (CI: "not ACTIVE after 2 minutes").
func TestCreateTableOverATableBeingDeleted(t *testing.T) {
	inUse := &smithy.GenericAPIError{Code: "ResourceInUseException", Message: "in use"}
	for _, tc := range []struct {
		name      string
		creates   []error
		describes []types.TableStatus
		want      string
	}{
		{"new", []error{nil}, []types.TableStatus{types.TableStatusCreating, types.TableStatusActive}, "Create Describe Describe"},
		{"exists", []error{inUse}, []types.TableStatus{types.TableStatusActive}, "Create Describe"},
		{"being deleted", []error{inUse, nil}, []types.TableStatus{types.TableStatusDeleting, "", types.TableStatusActive}, "Create Describe Describe Create Describe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &tableScript{creates: tc.creates, describes: tc.describes}
			if err := CreateTable(context.Background(), s, "jobs"); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.calls, " "); got != tc.want {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
		})
	}
}
