// External judge: prints the values of one column of every row of a Parquet
// file, as hyparquet reads them, as a JSON array (the layer chroot test
// compares decoded text, e.g. a DBF's code page 1251 names, with its source).
// 64-bit integers (BigInt) are printed as strings, lists as arrays, binaries
// (not decoded as text: utf8 false) as objects of byte indexes,
// timestamps as ISO text in UTC (hyparquet's Date).
// Usage: node values.mjs FILE COLUMN [raw]     (exit 1 with a message on failure)
// With "raw", geometry columns are not decoded to GeoJSON: binary values
// print as hex strings (the WKB bytes as stored).
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const [path, column, mode] = process.argv.slice(2)
if (!path || !column) {
  console.error('usage: node values.mjs FILE COLUMN')
  process.exit(2)
}
try {
  const file = await asyncBufferFromFile(path)
  const raw = mode === 'raw'
  const metadata = await parquetMetadataAsync(file, { geoparquet: !raw })
  const rows = await parquetReadObjects({ file, metadata, compressors, columns: [column], utf8: false })
  const hex = v => Array.from(v, b => b.toString(16).padStart(2, '0')).join('')
  const replacer = (_, v) => (raw && v instanceof Uint8Array ? hex(v) : typeof v === 'bigint' ? String(v) : v)
  console.log(JSON.stringify(rows.map(r => r[column]), replacer))
} catch (e) {
  console.error(String(e?.stack ?? e))
  process.exit(1)
}
