// One run through the official AG-UI TypeScript client (@ag-ui/client HttpAgent), for the Python tests.
// Reads {url, headers, threadId, messages, state, runId, context, forwardedProps} as JSON on stdin; prints one JSON
// line: {ok, error, events: [types], messages, state, result}. The client verifies the stream itself (its
// verifyEvents stage rejects any protocol violation): a stream it refuses is {ok: false, error}.
import { HttpAgent } from "@ag-ui/client";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const config = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const agent = new HttpAgent({
  url: config.url,
  headers: config.headers ?? {},
  threadId: config.threadId,
  initialMessages: config.messages ?? [],
  initialState: config.state ?? {},
});
const events = [];
const out = { ok: true, error: null, events };
try {
  const result = await agent.runAgent(
    { runId: config.runId, context: config.context ?? [], forwardedProps: config.forwardedProps ?? {} },
    { onEvent: ({ event }) => { events.push(event.type); } },
  );
  out.result = result.result ?? null;
  out.newMessages = result.newMessages;
} catch (error) {
  out.ok = false;
  out.error = String(error?.message ?? error);
}
out.messages = agent.messages;
out.state = agent.state;
process.stdout.write(JSON.stringify(out) + "\n");
