package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/geomigrate/geomigrate/internal/breaker"
	"github.com/geomigrate/geomigrate/internal/statestore"
)

// Circuit breaker records (breaker.Store) share the job table: one item
// per dependency under the key BreakerKeyPrefix + dependency, so no
// further table (or IAM grant) is needed. Each carries the status
// BreakerStatus and its updated_at, and the one index key breakerShard
// (a breaker is written per failure of its bucket, not per file), so the
// status index lists the breakers without reading the jobs; List of every
// job leaves them out.
const (
	BreakerKeyPrefix = "breaker#"
	BreakerStatus    = "BREAKER"
)

var _ breaker.Store = (*Backend)(nil)

var breakerShard = shardValue(BreakerStatus, 0)

func breakerKey(dependency string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: BreakerKeyPrefix + dependency}}
}

// GetBreaker reads a dependency's record with a strongly consistent read.
func (b *Backend) GetBreaker(ctx context.Context, dependency string) (breaker.Record, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &b.table, Key: breakerKey(dependency), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return breaker.Record{}, MapError("dynamodb.GetBreaker: table "+b.table+" "+dependency, err)
	}
	if len(out.Item) == 0 {
		return breaker.Record{}, fmt.Errorf("dynamodb.GetBreaker: %s: %w", dependency, breaker.ErrNotFound)
	}
	return decodeBreaker(out.Item)
}

// PutBreaker writes rec with Version expect+1 if the stored version is
// expect (0: no record yet): the same single-item conditional PutItem as
// Put. A failed condition is breaker.ErrConflict.
func (b *Backend) PutBreaker(ctx context.Context, rec breaker.Record, expect int64) error {
	if rec.Dependency == "" || expect < 0 {
		return fmt.Errorf("dynamodb.PutBreaker: record without dependency or negative expected version %d", expect)
	}
	rec.Version = expect + 1
	item, err := encodeBreaker(rec)
	if err != nil {
		return fmt.Errorf("dynamodb.PutBreaker: %s: %w", rec.Dependency, err)
	}
	if _, err := b.api.PutItem(ctx, b.versionedPut(item, expect)); err != nil {
		err = MapError("dynamodb.PutBreaker: table "+b.table+" "+rec.Dependency, err)
		if isConflict(err) {
			return fmt.Errorf("%w: %w", breaker.ErrConflict, err)
		}
		return err
	}
	return nil
}

// ListBreakers lists the breaker records through the status index (a
// Query for BreakerStatus), or a filtered Scan without it.
func (b *Backend) ListBreakers(ctx context.Context, fn func(breaker.Record) error) error {
	each := func(items []map[string]types.AttributeValue) error {
		for _, it := range items {
			r, err := decodeBreaker(it)
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	if !b.noIndex.Load() {
		in := &dynamodb.QueryInput{
			TableName: &b.table, IndexName: &b.index,
			KeyConditionExpression:    aws.String("#s = :s"),
			ExpressionAttributeNames:  map[string]string{"#s": AttrStatusShard},
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: breakerShard}},
		}
		p := dynamodb.NewQueryPaginator(b.api, in)
		first := true
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				if first && isMissingIndex(err) {
					b.noIndex.Store(true)
					break
				}
				return MapError("dynamodb.ListBreakers: table "+b.table, err)
			}
			first = false
			if err := each(page.Items); err != nil {
				return err
			}
		}
		if !b.noIndex.Load() {
			return nil
		}
	}
	in := &dynamodb.ScanInput{
		TableName: &b.table, ConsistentRead: aws.Bool(true),
		FilterExpression:          aws.String("begins_with(#pk, :bp)"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":bp": &types.AttributeValueMemberS{Value: BreakerKeyPrefix}},
	}
	p := dynamodb.NewScanPaginator(b.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return MapError("dynamodb.ListBreakers: table "+b.table, err)
		}
		if err := each(page.Items); err != nil {
			return err
		}
	}
	return nil
}

func encodeBreaker(rec breaker.Record) (map[string]types.AttributeValue, error) {
	item, err := attributevalue.MarshalMapWithOptions(rec, func(o *attributevalue.EncoderOptions) {
		o.EncodeTime = encodeTime
		o.OmitEmptyTime = true
	})
	if err != nil {
		return nil, err
	}
	dropEmptyStrings(item)
	item[AttrPK] = &types.AttributeValueMemberS{Value: BreakerKeyPrefix + rec.Dependency}
	item[AttrStatus] = &types.AttributeValueMemberS{Value: BreakerStatus}
	item[AttrStatusShard] = &types.AttributeValueMemberS{Value: breakerShard}
	item[AttrUpdatedAt] = &types.AttributeValueMemberS{Value: rec.UpdatedAt.UTC().Format(TimeLayout)}
	return item, nil
}

func decodeBreaker(item map[string]types.AttributeValue) (breaker.Record, error) {
	var r breaker.Record
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return breaker.Record{}, fmt.Errorf("dynamostore.decodeBreaker: %w", err)
	}
	if r.Dependency == "" {
		if pk, ok := item[AttrPK].(*types.AttributeValueMemberS); ok {
			r.Dependency = strings.TrimPrefix(pk.Value, BreakerKeyPrefix)
		}
	}
	return r, nil
}

func isConflict(err error) bool { return err != nil && errors.Is(err, statestore.ErrConflict) }
