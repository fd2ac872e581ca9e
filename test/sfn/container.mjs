// Runs the migrate definition's ConvertInContainer state, cut out into a
// machine of its own, on aws-local-stepfunctions (the second engine), with
// scripted answers for its two service tasks, and prints what happened.
//
// stdin: {
//   "definition": "<ASL text>", "input": <execution input>,
//   "tasks": [ {"fail": "<error name>"} | {} ],   // RunConvertTask's answers, in order
//   "results": [ <result object> ]                // ReadConvertResult's bodies, in order
// }
// stdout: {"status", "output", "error", "tasks": n, "reads": n, "resultKeys": [...]}
import { StateMachine } from 'aws-local-stepfunctions';
import { readJob, named, printOutcome } from './job.mjs';

const job = await readJob();
const definition = JSON.parse(job.definition);
const report = { tasks: 0, reads: 0, resultKeys: [] };

const taskResourceLocalHandlers = {
  RunConvertTask: async (params) => {
    const answer = (job.tasks ?? [])[report.tasks] ?? {};
    report.tasks++;
    const env = params.Overrides.ContainerOverrides[0].Environment[0];
    report.resultKeys.push(JSON.parse(env.Value).result.key);
    if (answer.fail) throw named(answer.fail, 'scripted failure');
    return { Tasks: [{ LastStatus: 'STOPPED', Containers: [{ ExitCode: 0 }] }] };
  },
  ReadConvertResult: async () => {
    const body = (job.results ?? [])[report.reads];
    report.reads++;
    return { Body: JSON.stringify(body) };
  },
};
const retryIntervalOverrides = {};
for (const [name, st] of Object.entries(definition.States)) {
  if (st.Retry) retryIntervalOverrides[name] = 0;
}
for (const [name, st] of Object.entries(definition.States.ConvertInContainer.Branches[0].States)) {
  if (st.Retry) retryIntervalOverrides[name] = 0;
}

const sm = new StateMachine(definition);
const execution = sm.run(job.input, {
  overrides: { taskResourceLocalHandlers, retryIntervalOverrides },
  context: {
    Execution: { Id: 'arn:aws:states:local:000000000000:execution:c:e1', Name: 'e1' },
    State: { Name: 'ConvertInContainer', EnteredTime: '', RetryCount: 0 },
  },
});
await printOutcome(execution, report);
