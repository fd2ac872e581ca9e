package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/geomigrate/geomigrate/internal/awsconfig"
)

// TableAPI is what CreateTable needs.
type TableAPI interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// TableInput is the table definition: pk (S) hash key, on-demand billing,
// the GSI status-shard-index (status_shard S hash, updated_at S range, all
// attributes projected). On AWS the infra stack creates the same table and also turns
// on TTL over expires_at (dynalite has no UpdateTimeToLive).
func TableInput(table string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrStatusShard), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrUpdatedAt), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(DefaultStatusIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrStatusShard), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrUpdatedAt), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		BillingMode: types.BillingModePayPerRequest,
	}
}

// CreateTable creates the job table (TableInput) unless it exists, and
// waits until it is ACTIVE. For tests and local runs; on AWS the infra
// stack owns the table.
func CreateTable(ctx context.Context, api TableAPI, table string) error {
	_, err := api.CreateTable(ctx, TableInput(table))
	if err != nil && awsconfig.ErrorCode(err) != "ResourceInUseException" {
		return MapError("dynamodb.CreateTable: "+table, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && out.Table != nil && out.Table.TableStatus == types.TableStatusActive && indexesActive(out.Table) {
			return nil
		}
		switch {
		case err == nil && out.Table != nil && out.Table.TableStatus == types.TableStatusDeleting:
			// A table of that name is going away (a test's cleanup, a
			// teardown): it answered ResourceInUse; create it once it is gone.
		case err != nil && awsconfig.ErrorCode(err) == "ResourceNotFoundException":
			if _, err := api.CreateTable(ctx, TableInput(table)); err != nil && awsconfig.ErrorCode(err) != "ResourceInUseException" {
				return MapError("dynamodb.CreateTable: "+table, err)
			}
		case err != nil:
			return MapError("dynamodb.DescribeTable: "+table, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dynamodb.CreateTable: %s: not ACTIVE after 2 minutes", table)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func indexesActive(t *types.TableDescription) bool {
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != "" && g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
