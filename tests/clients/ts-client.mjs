// ts-client.mjs drives one session of the official TypeScript SDK client
// (@modelcontextprotocol/sdk: Client + StreamableHTTPClientTransport) against
// a bridge destination served by the fake MCP server (tests/fakemcp):
//
//   node ts-client.mjs URL [--label NAME] [--steps N] [--ms MS]
//                          [--barrier DIR --parties N] [--deadline MS]
//
// It lists the tools, calls "progress" with an onprogress callback, answers
// the sampling/createMessage request that "sample" sends, waits for the
// notifications/tools/list_changed that "list_changed" triggers, and closes.
// It prints one JSON summary on stdout and exits 1 when any expectation
// fails (every wait is bounded; a watchdog ends the run after --deadline ms).
// With --barrier, the client waits before its progress call until --parties
// clients have written their label into DIR, so that concurrent clients'
// calls overlap.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    label: { type: 'string', default: 'ts' },
    steps: { type: 'string', default: '3' },
    ms: { type: 'string', default: '50' },
    deadline: { type: 'string', default: '60000' },
    barrier: { type: 'string' },
    parties: { type: 'string', default: '1' },
  },
});
const url = positionals[0];
const label = opts.label;
const steps = Number(opts.steps);
const stepMs = Number(opts.ms);
const callTimeout = 20_000;

const summary = {
  label,
  url,
  ok: false,
  steps: [],
  failures: [],
  tools: [],
  protocolVersion: null,
  serverInfo: null,
  progressToken: null,
  progressStart: null,
  progressEnd: null,
  progress: [],
  foreignProgress: [],
  sampling: { requests: [], answer: null, result: null },
  listChanged: 0,
  errors: [],
  // What the bridge answered each HTTP request with: "POST tools/call → 200
  // text/event-stream" tells which responses were SSE streams.
  http: [],
};

function fail(msg) {
  summary.failures.push(msg);
}

function finish() {
  summary.ok = summary.failures.length === 0;
  process.stdout.write(JSON.stringify(summary) + '\n');
  process.exit(summary.ok ? 0 : 1);
}

if (!url) {
  fail('usage: ts-client.mjs URL [--label NAME] [--steps N] [--ms MS]');
  finish();
}

// The watchdog: whatever hangs, the script ends and says where.
setTimeout(() => {
  fail(`deadline of ${opts.deadline} ms passed during step "${summary.steps.at(-1) ?? 'start'}"`);
  finish();
}, Number(opts.deadline)).unref();

function step(name) {
  summary.steps.push(name);
}

// withTimeout bounds a promise that has no timeout of its own.
function withTimeout(p, ms, what) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const answerText = `sampled answer for ${label}`;
let listChangedWaiter = null;
let recordErrors = true;

const client = new Client(
  { name: `stelae-ts-client-${label}`, version: '1.0.0' },
  { capabilities: { sampling: {} } },
);
client.onerror = (err) => {
  if (recordErrors) summary.errors.push(String(err?.stack ?? err));
};
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  summary.sampling.requests.push(request.params);
  return {
    model: 'stelae-test-model',
    role: 'assistant',
    content: { type: 'text', text: answerText },
    stopReason: 'endTurn',
  };
});
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  summary.listChanged++;
  listChangedWaiter?.();
});

// recordingFetch notes the method, JSON-RPC method, status and Content-Type
// of every HTTP exchange.
async function recordingFetch(input, init) {
  let what = init?.method ?? 'GET';
  try {
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : null;
    if (body?.method) what += ` ${body.method}${body.params?.name ? `(${body.params.name})` : ''}`;
    else if (body && 'id' in body) what += ' response';
  } catch {}
  const response = await fetch(input, init);
  summary.http.push(`${what} → ${response.status} ${response.headers.get('content-type') ?? ''}`.trim());
  return response;
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: recordingFetch,
  reconnectionOptions: {
    initialReconnectionDelay: 200,
    maxReconnectionDelay: 2000,
    reconnectionDelayGrowFactor: 1.5,
    maxRetries: 3,
  },
});

try {
  step('connect');
  await withTimeout(client.connect(transport, { timeout: callTimeout }), callTimeout + 1000, 'connect');
  summary.protocolVersion = transport.protocolVersion ?? null;
  summary.serverInfo = client.getServerVersion() ?? null;
  summary.sessionId = transport.sessionId ?? null;
  if (!summary.sessionId) fail('connect: no Mcp-Session-Id');

  // Watch the wire below the SDK: every progress notification this client
  // receives, and the progress token its own call sent.
  const sendOrig = transport.send.bind(transport);
  transport.send = async (message, options) => {
    if (message?.method === 'tools/call' && message.params?.name === 'progress') {
      summary.progressToken = message.params?._meta?.progressToken ?? null;
    }
    return sendOrig(message, options);
  };
  const onmessageOrig = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message?.method === 'notifications/progress') {
      const token = message.params?.progressToken;
      if (summary.progressToken === null || JSON.stringify(token) !== JSON.stringify(summary.progressToken)) {
        summary.foreignProgress.push(message.params);
      }
    }
    onmessageOrig?.(message, extra);
  };

  step('tools/list');
  const tools = await client.listTools(undefined, { timeout: callTimeout });
  summary.tools = tools.tools.map((t) => t.name);
  for (const want of ['progress', 'sample', 'list_changed', 'echo']) {
    if (!summary.tools.includes(want)) fail(`tools/list: no tool "${want}" in ${JSON.stringify(summary.tools)}`);
  }

  if (opts.barrier) {
    step('barrier');
    writeFileSync(join(opts.barrier, label), String(process.pid));
    const parties = Number(opts.parties);
    const until = Date.now() + 20_000;
    while (readdirSync(opts.barrier).length < parties) {
      if (Date.now() > until) throw new Error(`barrier: fewer than ${parties} clients arrived within 20 s`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  step('progress');
  summary.progressStart = Date.now();
  const progressResult = await client.callTool(
    { name: 'progress', arguments: { steps, ms: stepMs } },
    CallToolResultSchema,
    {
      timeout: callTimeout,
      onprogress: (p) => summary.progress.push(p),
    },
  );
  summary.progressEnd = Date.now();
  if (progressResult.content?.[0]?.text !== 'done') {
    fail(`progress: result ${JSON.stringify(progressResult)}, want text "done"`);
  }
  if (summary.progressToken === null) fail('progress: the SDK sent no progressToken');
  // Progress travels on another stream than the answer in JSON mode: give
  // the last notifications a moment to arrive.
  for (let i = 0; i < 40 && summary.progress.length < steps; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const got = summary.progress.map((p) => p.progress);
  const want = Array.from({ length: steps }, (_, i) => i + 1);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    fail(`progress: onprogress saw progress ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
  for (const p of summary.progress) {
    if (p.total !== steps) fail(`progress: event ${JSON.stringify(p)} has total ${p.total}, want this call's ${steps}`);
  }
  if (summary.foreignProgress.length > 0) {
    fail(`progress: ${summary.foreignProgress.length} progress notification(s) for a token other than ${JSON.stringify(summary.progressToken)}: ${JSON.stringify(summary.foreignProgress)}`);
  }

  step('sample');
  const prompt = `prompt from ${label}`;
  const sampleResult = await client.callTool(
    { name: 'sample', arguments: { prompt } },
    CallToolResultSchema,
    { timeout: callTimeout },
  );
  summary.sampling.result = sampleResult;
  summary.sampling.answer = sampleResult.answer ?? null;
  if (summary.sampling.requests.length !== 1) {
    fail(`sample: the sampling handler ran ${summary.sampling.requests.length} times, want 1`);
  } else if (summary.sampling.requests[0]?.messages?.[0]?.content?.text !== prompt) {
    fail(`sample: the sampling request carried ${JSON.stringify(summary.sampling.requests[0])}, want the prompt ${JSON.stringify(prompt)}`);
  }
  if (sampleResult.answer?.content?.text !== answerText) {
    fail(`sample: tool result ${JSON.stringify(sampleResult)} does not carry this client's answer ${JSON.stringify(answerText)}`);
  }

  step('list_changed');
  const arrived = new Promise((resolve) => {
    if (summary.listChanged > 0) resolve();
    listChangedWaiter = resolve;
  });
  const lcResult = await client.callTool({ name: 'list_changed', arguments: {} }, CallToolResultSchema, { timeout: callTimeout });
  if (lcResult.content?.[0]?.text !== 'sent') fail(`list_changed: result ${JSON.stringify(lcResult)}, want text "sent"`);
  try {
    await withTimeout(arrived, 10_000, 'notifications/tools/list_changed');
  } catch (err) {
    fail(String(err.message));
  }

  step('close');
  recordErrors = false;
  if (summary.errors.length > 0) fail(`client reported errors: ${summary.errors.join(' | ')}`);
  await withTimeout(transport.terminateSession(), 5000, 'DELETE session');
  await withTimeout(client.close(), 5000, 'close');
  step('done');
} catch (err) {
  fail(`step "${summary.steps.at(-1)}": ${err?.stack ?? err}`);
  if (summary.errors.length > 0) fail(`client reported errors: ${summary.errors.join(' | ')}`);
  try {
    await withTimeout(client.close(), 2000, 'close');
  } catch {}
}
finish();
