// The per-column digest every judge prints, {non_null, sum, chars}: a
// scalar value adds to it by its type (numbers, bigints, booleans as 1/0 and
// dates in ms to sum; strings and bytes by length to chars). Returns false
// for a value of another type, which the caller handles or refuses.
export function addScalar(c, v) {
  if (typeof v === 'number') c.sum += v
  else if (typeof v === 'bigint') c.sum += Number(v)
  else if (typeof v === 'boolean') c.sum += v ? 1 : 0
  else if (typeof v === 'string') c.chars += v.length
  else if (v instanceof Uint8Array) c.chars += v.length
  else if (v instanceof Date) c.sum += v.getTime()
  else return false
  return true
}
