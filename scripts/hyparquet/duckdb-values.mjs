// External judge: prints one column of every row of a Parquet file as
// DuckDB reads it (read_parquet, file order), as JSON {type, values}: the
// column's DuckDB type (e.g. "INTEGER[]", "TIMESTAMP WITH TIME ZONE") and
// its values cast to text by DuckDB (lists as JSON arrays of text,
// timestamps with a zone in UTC), null as null.
// Usage: node duckdb-values.mjs FILE COLUMN     (exit 1 with a message on failure)
import { DuckDBInstance } from '@duckdb/node-api'

const [path, column] = process.argv.slice(2)
if (!path || !column) {
  console.error('usage: node duckdb-values.mjs FILE COLUMN')
  process.exit(2)
}
const q = (s) => `"${s.replaceAll('"', '""')}"`
try {
  const db = await DuckDBInstance.create(':memory:')
  const con = await db.connect()
  await con.run(`SET TimeZone = 'UTC'`)
  const src = `read_parquet('${path.replaceAll("'", "''")}', file_row_number = true)`
  const [{ column_type: type }] = await (await con.run(`DESCRIBE SELECT ${q(column)} FROM ${src}`)).getRowObjectsJS()
  // A list's elements each cast to text, so that numbers and text compare
  // as DuckDB prints them.
  const expr = type.endsWith('[]') ? `list_transform(${q(column)}, x -> x::VARCHAR)` : `${q(column)}::VARCHAR`
  const rows = await (await con.run(`SELECT ${expr} AS v FROM ${src} ORDER BY file_row_number`)).getRowObjectsJS()
  console.log(JSON.stringify({ type, values: rows.map(r => r.v) }))
  process.exit(0)
} catch (err) {
  console.error(`duckdb: ${err?.stack ?? err}`)
  process.exit(1)
}
