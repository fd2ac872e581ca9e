// What the engine scripts share: the job each reads from stdin, and errors
// named as Step Functions names them (Error = the thrown error's name).

export async function readJob() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export function named(name, message) {
  const e = new Error(message);
  e.name = name;
  return e;
}
