// Runs the backfill definition's policy read and Map settings (ReadPolicy
// through CheckDatasetId, cut out into a machine of its own) on
// aws-local-stepfunctions (the second engine), with a scripted answer for
// ReadPolicy, and prints what happened.
//
// stdin: {
//   "definition": "<ASL text>", "input": <execution input>,
//   "parameter": {"value": "<the parameter's value>"} | {"fail": "<error name>"}
// }
// stdout: {"status", "output", "error", "reads": n}
import { StateMachine } from 'aws-local-stepfunctions';
import { readJob, named, printOutcome } from './job.mjs';

const job = await readJob();
const definition = JSON.parse(job.definition);
const report = { reads: 0 };

const taskResourceLocalHandlers = {
  ReadPolicy: async (params) => {
    report.reads++;
    if (job.parameter.fail) throw named(job.parameter.fail, 'scripted failure');
    return { Parameter: { Name: params.Name, Type: 'String', Value: job.parameter.value, Version: 1 } };
  },
};

const sm = new StateMachine(definition);
const execution = sm.run(job.input, {
  overrides: { taskResourceLocalHandlers, retryIntervalOverrides: { ReadPolicy: 0 } },
});
await printOutcome(execution, report);
