package cost

// Requests are the billable service requests of one file's execution that do
// not depend on its size.
type Requests struct {
	// S3GetHead: GET and HEAD (S3's "GET, SELECT and all other" class).
	S3GetHead int `json:"s3_get_head"`
	// S3PutCopyList: PUT, COPY, POST and LIST.
	S3PutCopyList int `json:"s3_put_copy_list"`
	// S3Delete: DELETE (not charged; counted to show it).
	S3Delete int `json:"s3_delete"`
	// DynamoDBRead and DynamoDBWrite are request units: a strongly
	// consistent GetItem is one read unit per 4 KB of item (one also when
	// the item does not exist), a PutItem one write unit per 1 KB
	// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html).
	DynamoDBRead  int `json:"dynamodb_read_units"`
	DynamoDBWrite int `json:"dynamodb_write_units"`
	// DynamoDBIndexWrite are the status index's write units (a GSI write
	// costs write units too): an entry put when a job is created, and
	// deleted and put again at each later write, its sort key updated_at
	// having moved (docs/decisions/0099).
	DynamoDBIndexWrite int `json:"dynamodb_index_write_units"`
}

// PerFile are the size-independent requests of one execution along each
// path, counted from the real handlers (HashCheck, Convert, Promote,
// Classify over an object store that is not a local directory, as on AWS)
// by cmd/geomigrate TestRequestsPerFile, which fails when the handlers and
// this table disagree. The source is a one-file GeoTIFF that Convert
// downloads (one GET); sources converted through ranged reads make more
// GETs, which Calculate adds by size (Settings.SourceReadWhole,
// RangeReadBytes), and so it does for multipart uploads of large outputs.
// A converted file (docs/decisions/0109): HashCheck HEADs the source,
// reads it once to hash it (pinned to the HEAD's ETag; the TIFF header it
// routes by is kept from that pass, migration.Route), lists its prefix for
// sidecars and HEADs the predicted output key (is it migrated already?);
// Convert reads the source once more (a Lambda apart from HashCheck's;
// pinned too, so no HEAD before or after) and PUTs the output to staging;
// Promote copies it to its final key (one conditional CopyObject of the
// version staged, no HEAD), PUTs the STAC Item there (conditional, no
// staged copy), GETs the dataset's Collection to see that its extent
// holds the item, and DELETEs the staged output. The first file of a
// dataset, or one widening the Collection's extent, also rewrites the
// Collection (a HEAD for its ETag, the GET again and one conditional PUT:
// rare over a dataset of many files, not charged). DynamoDB units are counted at the
// item's encoded size (records grow with their history: a refused job's
// record passes 1 KB, hence more units than calls), on a stand-in that
// charges the table's and the status index's writes as DynamoDB does: a
// converted job is 4 PutItems (claim, three transitions) and 1 + 3 × 2
// index writes, each later PutItem moving the entry's sort key
// (docs/decisions/0099). A file skipped by its name alone (not
// geospatial) makes no request at all; the rejected path is counted for a
// source that disappeared after it was listed (HashCheck's HEAD finds
// nothing: SourceNotFound). Classify lists a routed job's destination
// stem for what Promote may have published of it (rolled back before the
// route) and its staging: two LISTs on the remediation path.
var PerFile = map[Path]Requests{
	Converted:   {S3GetHead: 5, S3PutCopyList: 4, S3Delete: 1, DynamoDBRead: 6, DynamoDBWrite: 4, DynamoDBIndexWrite: 7},
	Skipped:     {S3GetHead: 3, S3PutCopyList: 1, DynamoDBRead: 2},
	Remediation: {S3GetHead: 4, S3PutCopyList: 3, DynamoDBRead: 4, DynamoDBWrite: 4, DynamoDBIndexWrite: 6},
	Rejected:    {S3GetHead: 1, DynamoDBRead: 1, DynamoDBWrite: 1, DynamoDBIndexWrite: 1},
}
