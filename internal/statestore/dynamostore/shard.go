package dynamostore

import (
	"fmt"
	"hash/fnv"

	"github.com/geomigrate/geomigrate/internal/statestore"
)

// StatusShards is the number of index partition key values per status
// (docs/decisions/0094): a job's index entries go under status#NN, NN its
// shard, so a status's index writes spread over this many values, each
// below DynamoDB's per-partition write limit up to the throughput
// docs/scale.md works out. Changing it re-keys every item: readers query
// exactly these shards.
const StatusShards = 64

// Shard is the shard of a job ID among n: FNV-1a of the ID, modulo n. A
// job keeps its shard for life (its ID never changes), so moving between
// statuses moves it between values of the same shard number.
func Shard(id string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}

// ShardKey is the index partition key of a job with this status and ID.
func ShardKey(status statestore.Status, id string) string {
	return shardValue(string(status), Shard(id, StatusShards))
}

func shardValue(status string, shard int) string { return fmt.Sprintf("%s#%02d", status, shard) }
