// Package dynamostore implements statestore.Backend on DynamoDB with
// single-item conditional writes only: no transactions and no
// UpdateTimeToLive, so it runs unchanged on DynamoDB and on dynalite.
//
// Table layout (one item per job, attribute names from the Job struct's
// dynamodbav tags):
//
//	pk            S  partition key (the job ID)
//	status        S  the job's status
//	status_shard  S  partition key of the GSI "status-shard-index": the
//	                 status, "#" and the job's shard (ShardKey), so that no
//	                 index partition key value takes more than about
//	                 1/StatusShards of a status's writes (docs/decisions/0094)
//	updated_at    S  sort key of the GSI: fixed-width UTC RFC 3339 with nine
//	                 fractional digits, so that string order is time order
//	expires_at  N  Unix seconds; the table's TTL attribute (set by the infra
//	               stack on AWS; dynalite ignores TTL)
//	version     N  the compare-and-swap token
//
// Put writes the whole item with ConditionExpression attribute_not_exists(pk)
// when expect is 0, #v = :expect otherwise; a failed condition is
// statestore.ErrConflict. Get is a strongly consistent GetItem. List by status
// is one Query per shard on the GSI (eventually consistent, as every GSI
// read), merged into updated_at order, oldest first; when the table has no such index the backend falls back to a
// consistent Scan with a filter, once detected. List of every status is a
// consistent Scan.
package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	AttrPK     = "pk"
	AttrStatus = "status"
	// AttrStatusShard is the index partition key (ShardKey).
	AttrStatusShard = "status_shard"
	AttrUpdatedAt   = "updated_at"
	AttrExpiresAt   = "expires_at"
	AttrVersion     = "version"
	// DefaultStatusIndex is the GSI used by List: partition key
	// status_shard, sort key updated_at.
	DefaultStatusIndex = "status-shard-index"
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
	// StatusIndex names the GSI (partition status_shard, sort updated_at);
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
	var after string
	if len(since) > 0 {
		after = since[0].UTC().Format(TimeLayout)
	}
	err := b.mergeShards(ctx, string(status), after, func(it map[string]types.AttributeValue) error {
		return each([]map[string]types.AttributeValue{it}, fn)
	})
	if err != nil && !isMissingIndex(err) {
		var mapped *shardError
		if errors.As(err, &mapped) {
			return MapError("dynamodb.List: table "+b.table+" "+string(status), mapped.err)
		}
	}
	return err
}

// shardError is a Query error of one shard, before MapError: List tells a
// missing index (fall back to Scan) from the rest.
type shardError struct{ err error }

func (e *shardError) Error() string { return e.err.Error() }
func (e *shardError) Unwrap() error { return e.err }

// shardCursor is one shard's Query: its paginator and the page not yet
// passed on.
type shardCursor struct {
	p     *dynamodb.QueryPaginator
	items []map[string]types.AttributeValue
}

// fill reads pages until one has items or there are none left.
func (c *shardCursor) fill(ctx context.Context) error {
	for len(c.items) == 0 && c.p.HasMorePages() {
		page, err := c.p.NextPage(ctx)
		if err != nil {
			return &shardError{err}
		}
		c.items = page.Items
	}
	return nil
}

// mergeShards queries every shard of status (ShardKey) on the index,
// updated at or after after ("" for all), and passes the items to fn in
// updated_at order, oldest first (ties by pk): a k-way merge holding one
// page per shard, so a long listing is streamed, not gathered. Shard 0 is
// read first (a missing index costs one Query), the others in parallel.
func (b *Backend) mergeShards(ctx context.Context, status, after string, fn func(map[string]types.AttributeValue) error) error {
	cursors := make([]*shardCursor, StatusShards)
	errs := make([]error, StatusShards)
	var wg sync.WaitGroup
	for i := range cursors {
		in := &dynamodb.QueryInput{
			TableName:                 &b.table,
			IndexName:                 &b.index,
			KeyConditionExpression:    aws.String("#s = :s"),
			ExpressionAttributeNames:  map[string]string{"#s": AttrStatusShard},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: shardValue(status, i)}},
		}
		if after != "" {
			in.KeyConditionExpression = aws.String("#s = :s AND #u >= :u")
			in.ExpressionAttributeNames["#u"] = AttrUpdatedAt
			in.ExpressionAttributeValues[":u"] = &types.AttributeValueMemberS{Value: after}
		}
		cursors[i] = &shardCursor{p: dynamodb.NewQueryPaginator(b.api, in)}
		if i == 0 {
			// One Query first: on a table without the index it is the
			// only one List makes before falling back to Scan.
			if err := cursors[0].fill(ctx); err != nil {
				return err
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cursors[i].fill(ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for {
		best := -1
		for i, c := range cursors {
			if len(c.items) > 0 && (best < 0 || itemBefore(c.items[0], cursors[best].items[0])) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		c := cursors[best]
		it := c.items[0]
		c.items = c.items[1:]
		if err := fn(it); err != nil {
			return err
		}
		if err := c.fill(ctx); err != nil {
			return err
		}
	}
}

func itemBefore(a, b map[string]types.AttributeValue) bool {
	ua, ub := stringAttr(a, AttrUpdatedAt), stringAttr(b, AttrUpdatedAt)
	if ua != ub {
		return ua < ub
	}
	return stringAttr(a, AttrPK) < stringAttr(b, AttrPK)
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
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
// key may not be an empty string; absent decodes to "" again), plus the
// index key status_shard of a job with a status.
func Encode(job statestore.Job) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(job, func(o *attributevalue.EncoderOptions) {
		o.EncodeTime = encodeTime
		o.OmitEmptyTime = true
	})
	if err != nil {
		return nil, err
	}
	dropEmptyStrings(item)
	if job.Status != "" {
		item[AttrStatusShard] = &types.AttributeValueMemberS{Value: ShardKey(job.Status, job.ID)}
	}
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
