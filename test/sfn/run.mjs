// Runs one execution of a state machine on aws-local-stepfunctions (the
// second engine) and prints what happened as one JSON document on stdout.
//
// stdin: {
//   "definition": "<ASL text, placeholders substituted>",
//   "input": <execution input>,
//   "executionArn": "...", "executionName": "...",
//   "lambdas": {"<FunctionName as in Parameters>": "http://127.0.0.1:PORT"},   // aws-lambda-rie endpoints
//   "retryIntervalMs": 0
// }
// stdout: {"status", "output", "error", "cause", "calls": [{state, payload}], "messages": [{queueUrl, body}], "retries": {state: n}}
//
// Task states are answered by taskResourceLocalHandlers:
//   lambda:invoke → HTTP POST of Payload to the function's rie; a function
//     error (rie answers 200 with {"errorMessage","errorType"}) is thrown as
//     an Error whose name is the errorType and whose message is the error
//     document, which is what Step Functions puts in {Error, Cause};
//   sqs:sendMessage → an in-memory recorder (MessageBody serialized to JSON
//     text when it is not a string, as Step Functions does).
import { StateMachine } from 'aws-local-stepfunctions';
import { readJob } from './job.mjs';
import { createHash } from 'node:crypto';

const INVOKE_PATH = '/2015-03-31/functions/function/invocations';

const job = await readJob();
const definition = JSON.parse(job.definition);
const calls = [];
const messages = [];
const retries = {};

// aws-local-stepfunctions 3.0.0 does not maintain $$.State (Name,
// EnteredTime, RetryCount): the context object is the static one passed in
// RunOptions.context. The definition reads $$.State.Name and
// $$.State.RetryCount into every Lambda payload, so the run passes
// placeholders (so the paths resolve) and the handler writes the values
// Step Functions would: the state's name and the number of retries of this
// entry of the state. A call is a retry when the call before it was of the
// same state and failed with an error one of its retriers matches, within
// that retrier's MaxAttempts; otherwise the state was entered anew (a
// state is entered more than once through the WaitForBreaker loop) and
// RetryCount starts again at 0. (The migrate definition runs one state at
// a time, so "the call before" is well defined.)
let last = null; // { state, error, attempt, retrier, retried }
function retrierFor(stateName, errorName) {
  const retry = definition.States[stateName]?.Retry ?? [];
  return retry.findIndex((r) => r.ErrorEquals.includes(errorName) ||
    (r.ErrorEquals.includes('States.ALL')) ||
    (r.ErrorEquals.includes('States.TaskFailed') && !errorName.startsWith('States.')));
}
function fillStateContext(stateName, payload) {
  let n = 0;
  let retried = 0;
  if (last && last.state === stateName && last.error) {
    const i = retrierFor(stateName, last.error);
    const max = i >= 0 ? (definition.States[stateName].Retry[i].MaxAttempts ?? 3) : 0;
    const used = last.retrier === i ? last.retried : 0;
    if (i >= 0 && used < max) {
      n = last.attempt + 1;
      retried = used + 1;
    }
    last = { state: stateName, error: null, attempt: n, retrier: i, retried };
  } else {
    last = { state: stateName, error: null, attempt: 0, retrier: -1, retried: 0 };
  }
  if (payload && typeof payload === 'object' && payload.context && typeof payload.context === 'object') {
    payload.context.state = stateName;
    payload.context.attempt = n;
  }
  return payload;
}

function lambdaHandler(stateName) {
  return async (input) => {
    const url = job.lambdas[input.FunctionName];
    if (!url) {
      const err = new Error(`no function ${input.FunctionName}`);
      err.name = 'States.TaskFailed';
      throw err;
    }
    const payload = fillStateContext(stateName, input.Payload ?? {});
    calls.push({ state: stateName, payload: structuredClone(payload) });
    const res = await fetch(url + INVOKE_PATH, { method: 'POST', body: JSON.stringify(payload) });
    const text = await res.text();
    if (res.status !== 200) {
      // rie answers 502 when the runtime crashed (a panic): Lambda.Unknown on AWS.
      const err = new Error(text);
      err.name = 'Lambda.Unknown';
      last.error = err.name;
      throw err;
    }
    const body = JSON.parse(text);
    if (body && typeof body === 'object' && !Array.isArray(body) &&
        typeof body.errorType === 'string' && typeof body.errorMessage === 'string' &&
        Object.keys(body).length <= 3) {
      const err = new Error(text);
      err.name = body.errorType;
      last.error = err.name;
      throw err;
    }
    return { ExecutedVersion: '$LATEST', Payload: body, StatusCode: 200 };
  };
}

function sqsHandler(stateName) {
  return async (input) => {
    const body = typeof input.MessageBody === 'string' ? input.MessageBody : JSON.stringify(input.MessageBody);
    messages.push({ state: stateName, queueUrl: input.QueueUrl, body });
    return {
      MessageId: `msg-${messages.length}`,
      MD5OfMessageBody: createHash('md5').update(body).digest('hex'),
    };
  };
}

const taskResourceLocalHandlers = {};
const retryIntervalOverrides = {};
for (const [name, st] of Object.entries(definition.States)) {
  if (st.Type !== 'Task') continue;
  if (st.Resource === 'arn:aws:states:::lambda:invoke') taskResourceLocalHandlers[name] = lambdaHandler(name);
  else if (st.Resource === 'arn:aws:states:::sqs:sendMessage') taskResourceLocalHandlers[name] = sqsHandler(name);
  if (st.Retry) retryIntervalOverrides[name] = job.retryIntervalMs ?? 0;
}

const sm = new StateMachine(definition);
const execution = sm.run(job.input, {
  overrides: { taskResourceLocalHandlers, retryIntervalOverrides },
  context: {
    Execution: { Id: job.executionArn, Name: job.executionName },
    State: { Name: '', EnteredTime: '', RetryCount: 0 }, // placeholders, see fillStateContext
  },
});

const logs = (async () => {
  for await (const ev of execution.eventLogs) {
    if (ev.type === 'StateRetried') retries[ev.state.name] = (retries[ev.state.name] ?? 0) + 1;
  }
})();

const report = { calls, messages, retries };
try {
  report.output = await execution.result;
  report.status = 'SUCCEEDED';
} catch (e) {
  report.status = 'FAILED';
  const cause = e.cause ?? e;
  report.error = cause.name;
  report.cause = cause.message;
}
await Promise.race([logs, new Promise((r) => setTimeout(r, 200))]);
process.stdout.write(JSON.stringify(report) + '\n');
