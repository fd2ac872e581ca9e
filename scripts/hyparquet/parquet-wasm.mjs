// External judge: reads every row of FILE with parquet-wasm (the Rust
// parquet crate compiled to WebAssembly) into Apache Arrow JS and prints
// {rows, null_geometries, columns} with read.mjs's column digests.
// Usage: node parquet-wasm.mjs FILE    (exit 1 with a message on stderr on failure)
import { readFileSync } from 'node:fs'
import { readParquet } from 'parquet-wasm'
import { tableFromIPC, DataType } from 'apache-arrow'
import { addScalar } from './digest.mjs'

const path = process.argv[2]
if (!path) {
  console.error('usage: node parquet-wasm.mjs FILE')
  process.exit(2)
}

try {
  const table = tableFromIPC(readParquet(new Uint8Array(readFileSync(path))).intoIPCStream())
  const geoText = table.schema.metadata.get('geo')
  const primary = geoText ? JSON.parse(geoText).primary_column : null
  const columns = {}
  let nullGeometries = 0
  // A struct's fields count only where the struct itself is valid (Arrow
  // leaves the children of a null struct slot unspecified).
  const digest = (name, vector, parentValid = () => true) => {
    const c = columns[name] = { non_null: 0, sum: 0, chars: 0 }
    const valid = (i) => parentValid(i) && vector.isValid(i)
    if (DataType.isStruct(vector.type)) {
      for (let i = 0; i < vector.length; i++) if (valid(i)) c.non_null++
      vector.type.children.forEach((f, k) => digest(`${name}.${f.name}`, vector.getChildAt(k), valid))
      return
    }
    for (let i = 0; i < vector.length; i++) {
      if (!valid(i)) continue
      const v = vector.get(i)
      if (v === null || v === undefined) continue
      c.non_null++
      if (!addScalar(c, v)) throw new Error(`column ${name}: no digest for ${typeof v}`)
    }
  }
  for (const field of table.schema.fields) {
    const vector = table.getChild(field.name)
    if (field.name === primary) {
      for (let i = 0; i < vector.length; i++) if (!vector.isValid(i)) nullGeometries++
      continue
    }
    digest(field.name, vector)
  }
  console.log(JSON.stringify({ rows: table.numRows, null_geometries: nullGeometries, columns }))
  process.exit(0)
} catch (err) {
  console.error(`parquet-wasm: ${err?.stack ?? err}`)
  process.exit(1)
}
