// Package dynamostore implements statestore.Backend on DynamoDB with
// single-item conditional writes only: no transactions and no
// UpdateTimeToLive, so it runs unchanged on DynamoDB and on dynalite.
//
// Table layout (one item per job, attribute names from the Job struct's
// dynamodbav tags):
//
//	pk          S  partition key (the job ID)
//	status      S  partition key of the GSI "status-index"
//	updated_at  S  sort key of the GSI: fixed-width UTC RFC 3339 with nine
//	               fractional digits, so that string order is time order
//	expires_at  N  Unix seconds; the table's TTL attribute (set by the infra
//	               stack on AWS; dynalite ignores TTL)
//	version     N  the compare-and-swap token
//
// Put writes the whole item with ConditionExpression attribute_not_exists(pk)
// when expect is 0, #v = :expect otherwise; a failed condition is
// statestore.ErrConflict. Get is a strongly consistent GetItem. List by status
// is a Query on the GSI (eventually consistent, as every GSI read; ordered by
// updated_at); when the table has no such index the backend falls back to a
// consistent Scan with a filter, once detected. List of every status is a
// consistent Scan.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
	"github.com/geomigrate/geomigrate/internal/fault"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Attribute and index names.
const (
	AttrPK        = "pk"
	AttrStatus    = "status"
	AttrUpdatedAt = "updated_at"
	AttrExpiresAt = "expires_at"
	AttrVersion   = "version"
	// DefaultStatusIndex is the GSI used by List.
	DefaultStatusIndex = "status-index"
)

// TimeLayout is how times are stored: fixed width, UTC, so that
// lexicographic order is chronological order (RFC3339Nano trims trailing
// zeros and would sort "…:05Z" after "…:05.1Z").
const TimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// API is the subset of *dynamodb.Client the backend uses.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Options configures the backend.
type Options struct {
	Table string
	// StatusIndex names the GSI (partition status, sort updated_at);
	// "" means DefaultStatusIndex.
	StatusIndex string
	// ScanOnly lists by status with a filtered Scan instead of the GSI.
	ScanOnly bool
}

// Backend is a statestore.Backend on one DynamoDB table.
type Backend struct {
	api     API
	table   string
	index   string
	noIndex atomic.Bool // the table turned out to have no status index
}

var _ statestore.Backend = (*Backend)(nil)

// New returns a Backend over api (usually awsconfig.NewDynamoDB).
func New(api API, opts Options) *Backend {
	b := &Backend{api: api, table: opts.Table, index: opts.StatusIndex}
	if b.index == "" {
		b.index = DefaultStatusIndex
	}
	b.noIndex.Store(opts.ScanOnly)
	return b
}

// Get reads the job with a strongly consistent read.
func (b *Backend) Get(ctx context.Context, id string) (statestore.Job, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &b.table,
		Key:            map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: id}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return statestore.Job{}, MapError("dynamodb.Get: table "+b.table+" "+id, err)
	}
	if len(out.Item) == 0 {
		return statestore.Job{}, fmt.Errorf("dynamodb.Get: %s: %w", id, statestore.ErrNotFound)
	}
	return Decode(out.Item)
}

// Put writes the whole job if the stored version is expect (0: the job must
// not exist) and stores it with Version expect+1, whatever job.Version
// says. A lost race returns statestore.ErrConflict.
func (b *Backend) Put(ctx context.Context, job statestore.Job, expect int64) error {
	if job.ID == "" {
		return fmt.Errorf("dynamodb.Put: empty job ID")
	}
	if expect < 0 {
		return fmt.Errorf("dynamodb.Put: %s: negative expected version %d", job.ID, expect)
	}
	job.Version = expect + 1
	item, err := Encode(job)
	if err != nil {
		return fmt.Errorf("dynamodb.Put: %s: %w", job.ID, err)
	}
	if _, err := b.api.PutItem(ctx, b.versionedPut(item, expect)); err != nil {
		return MapError("dynamodb.Put: table "+b.table+" "+job.ID, err)
	}
	return nil
}

// List calls fn for every job with the status ("" for all).
func (b *Backend) List(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error {
	if status == "" {
		return b.scan(ctx, "", fn)
	}
	if b.noIndex.Load() {
		return b.scan(ctx, status, fn)
	}
	err := b.query(ctx, status, fn)
	if err != nil && isMissingIndex(err) {
		b.noIndex.Store(true)
		return b.scan(ctx, status, fn)
	}
	return err
}

// ListUpdatedSince lists the records of a status updated at or after
// since: a range on the status index's sort key (updated_at, written in
// TimeLayout, which sorts as text), so older records are not read. Without
// the index it scans and filters.
func (b *Backend) ListUpdatedSince(ctx context.Context, status statestore.Status, since time.Time, fn func(statestore.Job) error) error {
	keep := func(j statestore.Job) error {
		if j.UpdatedAt.Before(since) {
			return nil
		}
		return fn(j)
	}
	if b.noIndex.Load() {
		return b.scan(ctx, status, keep)
	}
	err := b.query(ctx, status, keep, since)
	if err != nil && isMissingIndex(err) {
		b.noIndex.Store(true)
		return b.scan(ctx, status, keep)
	}
	return err
}

func (b *Backend) query(ctx context.Context, status statestore.Status, fn func(statestore.Job) error, since ...time.Time) error {
	in := &dynamodb.QueryInput{
		TableName:                 &b.table,
		IndexName:                 &b.index,
		KeyConditionExpression:    aws.String("#s = :s"),
		ExpressionAttributeNames:  map[string]string{"#s": AttrStatus},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: string(status)}},
	}
	if len(since) > 0 {
		in.KeyConditionExpression = aws.String("#s = :s AND #u >= :u")
		in.ExpressionAttributeNames["#u"] = AttrUpdatedAt
		in.ExpressionAttributeValues[":u"] = &types.AttributeValueMemberS{Value: since[0].UTC().Format(TimeLayout)}
	}
	first := true
	p := dynamodb.NewQueryPaginator(b.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if first && isMissingIndex(err) {
				return err // unmapped: List falls back to Scan
			}
			return MapError("dynamodb.List: table "+b.table+" "+string(status), err)
		}
		first = false
		if err := each(page.Items, fn); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) scan(ctx context.Context, status statestore.Status, fn func(statestore.Job) error) error {
	in := &dynamodb.ScanInput{TableName: &b.table, ConsistentRead: aws.Bool(true)}
	if status != "" {
		in.FilterExpression = aws.String("#s = :s")
		in.ExpressionAttributeNames = map[string]string{"#s": AttrStatus}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: string(status)}}
	} else {
		// The breakers' items share the table; they are not jobs.
		in.FilterExpression = aws.String("NOT begins_with(#pk, :bp)")
		in.ExpressionAttributeNames = map[string]string{"#pk": AttrPK}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":bp": &types.AttributeValueMemberS{Value: BreakerKeyPrefix}}
	}
	p := dynamodb.NewScanPaginator(b.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return MapError("dynamodb.List: table "+b.table+" "+string(status), err)
		}
		if err := each(page.Items, fn); err != nil {
			return err
		}
	}
	return nil
}

func each(items []map[string]types.AttributeValue, fn func(statestore.Job) error) error {
	for _, it := range items {
		j, err := Decode(it)
		if err != nil {
			return err
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}

func isMissingIndex(err error) bool {
	if awsconfig.ErrorCode(err) != "ValidationException" {
		return false
	}
	m := strings.ToLower(err.Error())
	return strings.Contains(m, "index")
}

func encodeTime(t time.Time) (types.AttributeValue, error) {
	return &types.AttributeValueMemberS{Value: t.UTC().Format(TimeLayout)}, nil
}

// Encode renders a job as a DynamoDB item: dynamodbav tags, times in
// TimeLayout, zero lease times omitted, and empty strings dropped (a GSI
// key may not be an empty string; absent decodes to "" again).
func Encode(job statestore.Job) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(job, func(o *attributevalue.EncoderOptions) {
		o.EncodeTime = encodeTime
		o.OmitEmptyTime = true
	})
	if err != nil {
		return nil, err
	}
	dropEmptyStrings(item)
	return item, nil
}

func dropEmptyStrings(m map[string]types.AttributeValue) {
	for k, v := range m {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			if v.Value == "" {
				delete(m, k)
			}
		case *types.AttributeValueMemberM:
			dropEmptyStrings(v.Value)
		case *types.AttributeValueMemberL:
			for _, e := range v.Value {
				if mm, ok := e.(*types.AttributeValueMemberM); ok {
					dropEmptyStrings(mm.Value)
				}
			}
		}
	}
}

// Decode reads a job item back.
func Decode(item map[string]types.AttributeValue) (statestore.Job, error) {
	var j statestore.Job
	if err := attributevalue.UnmarshalMap(item, &j); err != nil {
		return statestore.Job{}, fmt.Errorf("dynamostore.Decode: %w", err)
	}
	return j, nil
}

// MapError maps a DynamoDB error at op onto the taxonomy:
//
//   - ConditionalCheckFailedException → statestore.ErrConflict
//   - ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded,
//     InternalServerError, 5xx, timeouts, resets → TransientError
//   - AccessDenied, ResourceNotFoundException (the table is missing),
//     credentials, ValidationException/SerializationException (a schema or
//     configuration mismatch; retrying cannot help) → SystemicError
func MapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	switch code := awsconfig.ErrorCode(err); {
	case errors.As(err, &ccf), code == "ConditionalCheckFailedException":
		return fmt.Errorf("%s: %w (%w)", op, statestore.ErrConflict, err)
	case code == "ValidationException", code == "SerializationException",
		code == "ItemCollectionSizeLimitExceededException":
		return fault.Systemic(op, err)
	case code == "TransactionConflictException":
		return fault.Transient(op, err)
	}
	return awsconfig.Wrap(op, err)
}

// versionedPut is the PutItem of an item whose version was expect: the
// item must not exist yet when expect is 0, and must still carry version
// expect otherwise (optimistic locking; a failed condition is
// ConditionalCheckFailedException).
func (b *Backend) versionedPut(item map[string]types.AttributeValue, expect int64) *dynamodb.PutItemInput {
	in := &dynamodb.PutItemInput{TableName: &b.table, Item: item}
	if expect == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		in.ExpressionAttributeNames = map[string]string{"#pk": AttrPK}
		return in
	}
	in.ConditionExpression = aws.String("#v = :expect")
	in.ExpressionAttributeNames = map[string]string{"#v": AttrVersion}
	in.ExpressionAttributeValues = map[string]types.AttributeValue{
		":expect": &types.AttributeValueMemberN{Value: strconv.FormatInt(expect, 10)},
	}
	return in
}
