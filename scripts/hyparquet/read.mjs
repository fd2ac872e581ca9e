// External judge for GeoParquet files: reads every row of FILE with hyparquet
// (an independent Parquet reader, ZSTD via hyparquet-compressors), decodes
// every geometry of the primary column (hyparquet turns GeoParquet WKB
// columns into GeoJSON) and prints one JSON object:
//   {rows, row_groups, created_by, geo, geometry_types, bbox, null_geometries, first_geometry, columns}
// columns digests every other column (struct fields as "column.field"), in
// row order: {non_null, sum of numbers, booleans (1/0) and dates (ms), chars
// of strings (UTF-16 units) and bytes of binaries}.
// Usage: node read.mjs FILE        (exit 1 with a message on stderr on failure)
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import { addScalar } from './digest.mjs'

const path = process.argv[2]
if (!path) {
  console.error('usage: node read.mjs FILE')
  process.exit(2)
}

try {
  const file = await asyncBufferFromFile(path)
  const metadata = await parquetMetadataAsync(file)
  const geoText = metadata.key_value_metadata?.find(kv => kv.key === 'geo')?.value
  const geo = geoText ? JSON.parse(geoText) : null
  const primary = geo?.primary_column

  const rows = await parquetReadObjects({ file, metadata, compressors })
  const types = new Set()
  const bbox = [Infinity, Infinity, -Infinity, -Infinity]
  let nulls = 0
  let first = null

  const visit = (c) => {
    if (typeof c[0] === 'number') {
      if (Number.isNaN(c[0]) && Number.isNaN(c[1])) return false
      bbox[0] = Math.min(bbox[0], c[0]); bbox[1] = Math.min(bbox[1], c[1])
      bbox[2] = Math.max(bbox[2], c[0]); bbox[3] = Math.max(bbox[3], c[1])
      return c.length >= 3
    }
    let z = false
    for (const cc of c) z = visit(cc) || z
    return z
  }
  const geometry = (g) => {
    if (g.type === 'GeometryCollection') {
      let z = false
      for (const m of g.geometries) z = geometry(m) || z
      return z
    }
    return visit(g.coordinates)
  }

  const columns = {}
  const digest = (name, v) => {
    const c = columns[name] ??= { non_null: 0, sum: 0, chars: 0 }
    if (v === null || v === undefined) return
    c.non_null++
    if (!addScalar(c, v) && typeof v === 'object') for (const [k, x] of Object.entries(v)) digest(`${name}.${k}`, x)
  }
  for (const row of rows) {
    for (const [k, v] of Object.entries(row)) if (k !== primary) digest(k, v)
  }

  for (const row of rows) {
    const g = primary ? row[primary] : undefined
    if (g === null || g === undefined) { nulls++; continue }
    if (typeof g !== 'object' || !g.type) throw new Error(`row geometry not decoded: ${typeof g}`)
    // hyparquet's GeoJSON has no Z in the type name; a Z coordinate does.
    // (An empty geometry has no coordinates, so it counts as 2D.)
    const z = geometry(g)
    types.add(z ? `${g.type} Z` : g.type)
    if (first === null) first = g
  }

  const out = {
    rows: rows.length,
    row_groups: metadata.row_groups.length,
    created_by: metadata.created_by ?? null,
    geo,
    geometry_types: [...types].sort(),
    bbox: bbox[0] <= bbox[2] ? bbox : null,
    null_geometries: nulls,
    first_geometry: first,
    columns,
  }
  console.log(JSON.stringify(out, (_, v) => typeof v === 'bigint' ? v.toString() : v))
  // Exit at once: without it node lingers ~2 s on teardown here.
  process.exit(0)
} catch (err) {
  console.error(`hyparquet: ${err?.stack ?? err}`)
  process.exit(1)
}
