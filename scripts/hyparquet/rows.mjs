// External judge: dumps every row of a Parquet file as hyparquet reads it,
// one JSON object a line, for scripts/judge/gdaljudge.py to compare with the
// source as OGR reads it. The primary geometry column (the `geo` metadata's
// primary_column) is printed as "$geometry": the WKB bytes in hex, undecoded;
// other binaries as {"$bytes": hex}, dates and timestamps as {"$date": ISO
// 8601 UTC}, 64-bit integers as numbers (as text past 2^53), lists as arrays.
// Usage: node rows.mjs FILE         rows, one JSON object a line
//        node rows.mjs --geo FILE   the `geo` key-value metadata (null if none)
// Exit 1 with a message on stderr on failure.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const args = process.argv.slice(2)
const geoOnly = args[0] === '--geo'
const path = geoOnly ? args[1] : args[0]
if (!path) {
  console.error('usage: node rows.mjs [--geo] FILE')
  process.exit(2)
}

const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
const plain = (v) => {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString()
  if (v instanceof Date) return { $date: v.toISOString() }
  if (v instanceof Uint8Array) return { $bytes: hex(v) }
  if (Array.isArray(v)) return v.map(plain)
  if (typeof v === 'number' && !Number.isFinite(v)) return Number.isNaN(v) ? 'NaN' : (v > 0 ? 'Infinity' : '-Infinity')
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}

try {
  const file = await asyncBufferFromFile(path)
  // geoparquet: false keeps the WKB undecoded; utf8: false keeps a binary
  // column binary (columns typed as strings are still decoded as text).
  const metadata = await parquetMetadataAsync(file, { geoparquet: false })
  const geoText = metadata.key_value_metadata?.find(kv => kv.key === 'geo')?.value
  if (geoOnly) {
    process.stdout.write((geoText ?? 'null') + '\n')
    process.exit(0)
  }
  const primary = geoText ? JSON.parse(geoText).primary_column : undefined
  const rows = await parquetReadObjects({ file, metadata, compressors, geoparquet: false, utf8: false })
  const lines = []
  for (const row of rows) {
    const out = {}
    for (const [k, v] of Object.entries(row)) {
      if (k === primary) out.$geometry = v == null ? null : hex(v)
      else out[k] = plain(v)
    }
    lines.push(JSON.stringify(out))
  }
  process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''))
  process.exit(0)
} catch (err) {
  console.error(`rows.mjs: ${err?.stack ?? err}`)
  process.exit(1)
}
