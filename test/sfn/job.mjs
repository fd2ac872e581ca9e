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

// printOutcome waits for execution to end and prints report with its
// status, output and error name as one JSON document.
export async function printOutcome(execution, report) {
  try {
    report.output = await execution.result;
    report.status = 'SUCCEEDED';
  } catch (e) {
    report.status = 'FAILED';
    report.error = e.name;
  }
  process.stdout.write(JSON.stringify(report));
}
