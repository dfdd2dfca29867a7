// An approval through the official AG-UI TypeScript client (@ag-ui/client HttpAgent), for the Python tests.
// Reads {url, threadId, messages, forwardedProps, payload} as JSON on stdin: runs the agent; when the run ends on
// interrupts, answers each with `payload` (buildResumeArray) and runs again with {resume}, as an application would.
// Prints one JSON line: {ok, error, runs: [{events, pending}], messages}.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const config = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const agent = new HttpAgent({ url: config.url, threadId: config.threadId, initialMessages: config.messages ?? [] });
const out = { ok: true, error: null, runs: [] };

async function run(parameters) {
  const events = [];
  await agent.runAgent(parameters, { onEvent: ({ event }) => { events.push(event.type); } });
  out.runs.push({ events, pending: agent.pendingInterrupts.map((i) => ({ ...i })) });
}

try {
  await run({ forwardedProps: config.forwardedProps ?? {} });
  if (agent.pendingInterrupts.length) {
    const responses = Object.fromEntries(
      agent.pendingInterrupts.map((i) => [i.id, { status: "resolved", payload: config.payload }]));
    await run({ forwardedProps: config.forwardedProps ?? {}, resume: buildResumeArray(agent.pendingInterrupts, responses) });
  }
} catch (error) {
  out.ok = false;
  out.error = String(error?.message ?? error);
}
out.messages = agent.messages;
process.stdout.write(JSON.stringify(out) + "\n");
