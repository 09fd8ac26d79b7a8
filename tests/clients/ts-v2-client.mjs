// ts-v2-client.mjs drives the official TypeScript SDK v2 client
// (@modelcontextprotocol/client: Client + StreamableHTTPClientTransport) in
// the MCP 2026-07-28 era against a bridge destination served by the fake MCP
// server (tests/fakemcp):
//
//   node ts-v2-client.mjs URL --mode auto|pin [--deadline MS] [--prefix P]
//
// --mode auto probes with server/discover and must stay in the 2026-07-28
// era; --mode pin speaks only 2026-07-28. Either way it: lists the tools;
// calls echo; calls progress with an onprogress callback; runs an
// elicitation and a sampling round trip (the child's requests reach the
// client as input_required results, answered by its handlers); opens a
// subscriptions/listen stream and receives tools/list_changed; aborts a
// call of "never" and checks that the child saw the cancellation (its
// stats). It prints one JSON summary on stdout and exits 1 when any
// expectation fails (every wait is bounded; a watchdog ends the run after
// --deadline ms). With --prefix every tool's name starts with P (the fake
// server as a member of a profile: P is 'member__').

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { parseArgs } from 'node:util';
import { run } from './run.mjs';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    mode: { type: 'string', default: 'auto' },
    deadline: { type: 'string', default: '60000' },
    prefix: { type: 'string', default: '' },
  },
});
// tool is the name the client calls the fake server's tool n by.
const tool = (n) => opts.prefix + n;
const url = positionals[0];
const callTimeout = 20_000;

const summary = {
  mode: opts.mode,
  era: null,
  protocolVersion: null,
  tools: [],
  progress: [],
  elicitations: 0,
  samplings: 0,
  listChanged: 0,
  cancelledBefore: null,
  cancelledAfter: null,
  // Every HTTP exchange: "POST tools/call(echo) → 200 application/json [session none]".
  http: [],
};

const { fail, finish, step, withTimeout } = run(summary, Number(opts.deadline));

if (!url || !['auto', 'pin'].includes(opts.mode)) {
  fail('usage: ts-v2-client.mjs URL --mode auto|pin');
  finish();
}

// recordingFetch notes every exchange, and whether a session or an
// initialize ever appears on the wire (neither may in the 2026-07-28 era).
let sawInitialize = false;
let sawSession = false;
async function recordingFetch(input, init) {
  let what = init?.method ?? 'GET';
  try {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : null;
    if (body?.method) what += ` ${body.method}${body.params?.name ? `(${body.params.name})` : ''}`;
    else if (body && 'id' in body) what += ' response';
    if (body?.method === 'initialize') sawInitialize = true;
  } catch {}
  const headers = new Headers(init?.headers);
  if (headers.get('mcp-session-id')) sawSession = true;
  const response = await fetch(input, init);
  if (response.headers.get('mcp-session-id')) sawSession = true;
  summary.http.push(`${what} → ${response.status} ${response.headers.get('content-type') ?? ''}`.trim());
  return response;
}

const mode = opts.mode === 'pin' ? { pin: '2026-07-28' } : 'auto';
const client = new Client(
  { name: `stelae-ts-v2-${opts.mode}`, version: '1.0.0' },
  { capabilities: { elicitation: { form: {} }, sampling: {} }, versionNegotiation: { mode } },
);
client.setRequestHandler('elicitation/create', async (request) => {
  summary.elicitations++;
  if (request.params?.message !== 'Your name?') fail(`elicitation: asked ${JSON.stringify(request.params)}`);
  return { action: 'accept', content: { name: 'ts-v2-elicited' } };
});
client.setRequestHandler('sampling/createMessage', async () => {
  summary.samplings++;
  return { model: 'stelae-test-model', role: 'assistant', content: { type: 'text', text: 'ts-v2-sampled' } };
});
let listChangedWaiter = null;
client.setNotificationHandler('notifications/tools/list_changed', () => {
  summary.listChanged++;
  listChangedWaiter?.();
});

// The fake's structured answers ({"answer": …}) ride in the result beside a
// text block carrying the same JSON.
function toolJSON(result) {
  const text = result?.content?.find((c) => c.type === 'text')?.text ?? '';
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function cancelledCount() {
  const stats = await client.callTool({ name: tool('stats'), arguments: {} }, { timeout: callTimeout });
  const parsed = toolJSON(stats);
  return parsed ? (parsed.cancelled ?? []).length : -1;
}

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch });

try {
  step('connect');
  await withTimeout(client.connect(transport), callTimeout + 1000, 'connect');
  summary.era = client.getProtocolEra?.() ?? null;
  summary.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
  if (summary.protocolVersion !== '2026-07-28') fail(`connect: negotiated ${summary.protocolVersion} (era ${summary.era}), want 2026-07-28`);

  step('tools/list');
  const tools = await client.listTools(undefined, { timeout: callTimeout });
  summary.tools = tools.tools.map((t) => t.name);
  for (const want of ['echo', 'progress', 'ask', 'sample', 'never', 'list_changed', 'stats']) {
    if (!summary.tools.includes(tool(want))) fail(`tools/list: no tool "${tool(want)}" in ${JSON.stringify(summary.tools)}`);
  }

  step('echo');
  const echo = await client.callTool({ name: tool('echo'), arguments: { text: 'hello v2' } }, { timeout: callTimeout });
  if (echo.content?.[0]?.text !== 'hello v2') fail(`echo: ${JSON.stringify(echo)}`);

  step('progress');
  const progress = await client.callTool(
    { name: tool('progress'), arguments: { steps: 3, ms: 50 } },
    { timeout: callTimeout, onprogress: (p) => summary.progress.push(p) },
  );
  if (progress.content?.[0]?.text !== 'done') fail(`progress: ${JSON.stringify(progress)}`);
  const got = summary.progress.map((p) => p.progress);
  if (JSON.stringify(got) !== '[1,2,3]') fail(`progress: onprogress saw ${JSON.stringify(summary.progress)}, want progress 1, 2, 3`);

  step('elicitation');
  const asked = await client.callTool(
    {
      name: tool('ask'),
      arguments: {
        method: 'elicitation/create',
        params: JSON.stringify({ mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } }),
      },
    },
    { timeout: callTimeout },
  );
  const answer = toolJSON(asked)?.answer;
  if (summary.elicitations !== 1 || answer?.action !== 'accept' || answer?.content?.name !== 'ts-v2-elicited') {
    fail(`elicitation: handler ran ${summary.elicitations} times; the child got ${JSON.stringify(toolJSON(asked))}`);
  }

  step('sampling');
  const sampled = await client.callTool({ name: tool('sample'), arguments: { prompt: 'hi' } }, { timeout: callTimeout });
  if (summary.samplings !== 1 || toolJSON(sampled)?.answer?.content?.text !== 'ts-v2-sampled') {
    fail(`sampling: handler ran ${summary.samplings} times; the child got ${JSON.stringify(toolJSON(sampled))}`);
  }

  step('listen');
  const sub = await client.listen({ toolsListChanged: true }, { timeout: callTimeout });
  if (!sub.honoredFilter?.toolsListChanged) fail(`listen: honoured ${JSON.stringify(sub.honoredFilter)}`);
  const arrived = new Promise((resolve) => {
    listChangedWaiter = resolve;
  });
  const lc = await client.callTool({ name: tool('list_changed'), arguments: {} }, { timeout: callTimeout });
  if (lc.content?.[0]?.text !== 'sent') fail(`list_changed: ${JSON.stringify(lc)}`);
  try {
    await withTimeout(arrived, 10_000, 'notifications/tools/list_changed on the listen stream');
  } catch (err) {
    fail(String(err.message));
  }
  await sub.close();

  step('cancel');
  summary.cancelledBefore = await cancelledCount();
  const abort = new AbortController();
  const never = client.callTool({ name: tool('never'), arguments: {} }, { timeout: callTimeout, signal: abort.signal });
  setTimeout(() => abort.abort(new Error('the test gave up')), 300);
  try {
    await never;
    fail('cancel: the aborted call resolved');
  } catch {}
  for (let i = 0; i < 100; i++) {
    summary.cancelledAfter = await cancelledCount();
    if (summary.cancelledAfter > summary.cancelledBefore) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!(summary.cancelledAfter > summary.cancelledBefore)) {
    fail(`cancel: the child saw ${summary.cancelledBefore} cancellations before and ${summary.cancelledAfter} after aborting a call`);
  }

  if (sawInitialize) fail('an initialize went over the wire in the 2026-07-28 era');
  if (sawSession) fail('an Mcp-Session-Id went over the wire in the 2026-07-28 era');

  step('close');
  await client.close();
  step('done');
} catch (err) {
  fail(`step ${summary.steps.at(-1)}: ${err?.stack ?? err}`);
}
finish();
