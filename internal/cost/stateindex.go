package cost

import "math"

// StateIndexShards is the number of index partition key values per status
// the DynamoDB store writes (docs/decisions/0094); the store's test checks
// it equals its own constant.
const StateIndexShards = 64

// The state index arithmetic's inputs: the rate asked for, and what one job
// writes, counted by TestIndexWriteDistribution on the DynamoDB stand-in
// (claim, an attempt per task state, a retry for one in four, an end) and
// the encoded item size (1.0 KB at claim to 2.0 KB with six transitions).
const (
	indexRate          = 2000.0 // objects per second
	putsPerJob         = 6.25   // PutItems (each after a consistent GetItem)
	itemWriteUnits     = 2.0    // write units per PutItem: an item ≤ 2 KB
	processingWrites   = 6.25   // index writes under PROCESSING per job
	completedWrites    = 0.8    // under COMPLETED (8 jobs in 10 complete)
	partitionWriteUnit = 1000.0 // per partition, per second (table and index)
	partitionReadUnit  = 3000.0
	queryStatuses      = 5 // executionfailed looks in PROCESSING, RETRYING, QUARANTINED, REMEDIAL, COMPLETED
)

// What the real handlers write for one converted file, counted by
// cmd/geomigrate TestRequestsPerFile on a stand-in that charges as
// DynamoDB does (PerFile's DynamoDBWrite and DynamoDBIndexWrite): fewer
// than the stress sequence above, which the table keeps as its bound.
const (
	convertedPuts            = 4 // claim and three transitions, each item ≤ 1 KB
	convertedIndexProcessing = 6 // index units under PROCESSING: a put, then two deletes and puts, then a delete
	convertedIndexCompleted  = 1
)

// writeStateIndex writes the section on the state table's partitions.
func writeStateIndex(pf func(string, ...any)) {
	n := float64(StateIndexShards)
	base := indexRate * putsPerJob * itemWriteUnits
	reads := indexRate * putsPerJob // a strongly consistent read of ≤ 4 KB is one unit
	hot := indexRate * processingWrites * itemWriteUnits
	perShard := hot / n
	// A shard's jobs in one second are binomial(rate, 1/N): five standard
	// deviations above the mean.
	spread := 1 + 5*math.Sqrt((n-1)/indexRate)
	completed := indexRate * completedWrites * itemWriteUnits / n
	pf("## The state index at %s objects/s\n\n", num(int64(indexRate)))
	pf("DynamoDB limits each partition, of the table and of a GSI alike, to %s write units and %s read units per second\n",
		num(int64(partitionWriteUnit)), num(int64(partitionReadUnit)))
	pf("([warm throughput scenarios](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html),\n")
	pf("[key range throughput exceeded](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html));\n")
	pf("one partition key value is served by one partition unless its sort keys can be split, which a growing `updated_at` cannot.\n")
	pf("A GSI entry whose key changes costs a delete and a put ([GSI writes](https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.Writes)).\n")
	pf("Per job (counted by `TestIndexWriteDistribution` on dynalite): %.2f PutItems of ≤ %.0f KB (%.0f write units each, projection ALL: the\n", putsPerJob, itemWriteUnits, itemWriteUnits)
	pf("same in the index), each after a strongly consistent GetItem; %.2f index writes under PROCESSING, %.1f under COMPLETED.\n\n", processingWrites, completedWrites)
	pf("| | per second | busiest partition key value | limit |\n|---|---:|---:|---:|\n")
	pf("| table writes (key: the job ID) | %s WCU | one job's item: %.1f WCU over its whole run (≥ %.0f partitions in all) | %s |\n",
		num(int64(base)), putsPerJob*itemWriteUnits, math.Ceil(base/partitionWriteUnit), num(int64(partitionWriteUnit)))
	pf("| table reads | %s RCU | one job's item: %.2f RCU over its run | %s |\n", num(int64(reads)), putsPerJob, num(int64(partitionReadUnit)))
	pf("| index writes, key `status` (before) | %s WCU | %s WCU (`PROCESSING`): %.0f× the limit, cap %.0f objects/s | %s |\n",
		num(int64(hot+indexRate*completedWrites*itemWriteUnits)), num(int64(hot)), hot/partitionWriteUnit,
		partitionWriteUnit/(processingWrites*itemWriteUnits), num(int64(partitionWriteUnit)))
	pf("| index writes, key `status_shard`, N = %d | %s WCU | %.0f WCU mean per `PROCESSING#k`, %.0f at five standard deviations; `COMPLETED#k` %.0f | %s |\n",
		StateIndexShards, num(int64(hot+indexRate*completedWrites*itemWriteUnits)), perShard, perShard*spread, completed, num(int64(partitionWriteUnit)))
	pf("| index reads: executionfailed's search | %d Queries per failed execution (%.0f read units) | 1 Query per value per search: 0.5 RCU | %s |\n\n",
		queryStatuses*StateIndexShards, float64(queryStatuses*StateIndexShards)*0.5, num(int64(partitionReadUnit)))
	pf("With N = %d the mean load of the busiest index value reaches the limit at %s objects/s; past that, N must grow\n",
		StateIndexShards, num(int64(n*partitionWriteUnit/(processingWrites*itemWriteUnits))))
	pf("(a re-key of the live items, docs/decisions/0094). The table itself has no hot key: its\n")
	pf("total (%s WCU/s) is a table-level figure, above the %s write units/s a new on-demand table is warm for, so pre-warm it\n",
		num(int64(base)), num(4000))
	pf("(warm throughput) or let it double from its previous peak before a run at this rate.\n\n")
	pf("The real handlers write less than that sequence: a converted file is %d PutItems of ≤ 1 KB (%d table write units, `cost.PerFile`)\n",
		convertedPuts, PerFile[Converted].DynamoDBWrite)
	pf("and %d index write units, %d under `PROCESSING#k` and %d under `COMPLETED#k` (each later PutItem moves the entry's sort key: a delete\n",
		PerFile[Converted].DynamoDBIndexWrite, convertedIndexProcessing, convertedIndexCompleted)
	pf("and a put), counted by `cmd/geomigrate` TestRequestsPerFile on a stand-in that charges writes as DynamoDB does. At %s objects/s that\n", num(int64(indexRate)))
	pf("is %.0f WCU mean per `PROCESSING#k`, and the mean reaches the limit at %s objects/s; the table above is the bound.\n\n",
		indexRate*convertedIndexProcessing/n, num(int64(n*partitionWriteUnit/convertedIndexProcessing)))
}
