// ts-session.mjs runs one session of the official TypeScript SDK client
// (@modelcontextprotocol/sdk: Client + StreamableHTTPClientTransport) against
// any bridge destination, the way a real connector uses it:
//
//   node ts-session.mjs URL [--label NAME] [--caps sampling,roots,elicitation]
//                           [--elicit-modes form,url] [--root PATH ...] [--call 'TOOL {"arg":1}' ...]
//                           [--wait-roots N] [--no-delete] [--deadline MS]
//                           [--repeat N] [--pause-ms MS]
//                           [--header 'Name: value' ...]
//
// It connects declaring the given client capabilities, answers the server's
// sampling/createMessage (with "sampled by LABEL"), roots/list (with the
// --root paths as file:// URIs) and elicitation/create (accept, empty
// content) requests, lists the tools, then calls each --call in order.
// --elicit-modes declares elicitation with those modes (MCP 2025-11-25:
// {"form":{},"url":{}}; --caps elicitation declares {}, form mode only);
// a URL-mode request is accepted without content (the user agreed to open
// the page). Every elicitation request's params are kept in the summary
// (elicitations). With
// --wait-roots N it first waits (10 s at most) until the server asked for
// roots N times. With --repeat N the calls are made N times over, with
// --pause-ms between calls. It ends with DELETE (terminateSession) unless --no-delete,
// which leaves the session open as claude.ai and the Inspector CLI do. It
// prints one JSON summary on stdout and exits 1 when a step fails (a
// watchdog ends the run after --deadline ms).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    label: { type: 'string', default: 'ts' },
    caps: { type: 'string', default: '' },
    root: { type: 'string', multiple: true, default: [] },
    call: { type: 'string', multiple: true, default: [] },
    'wait-roots': { type: 'string', default: '0' },
    'no-delete': { type: 'boolean', default: false },
    deadline: { type: 'string', default: '60000' },
    repeat: { type: 'string', default: '1' },
    'pause-ms': { type: 'string', default: '0' },
    header: { type: 'string', multiple: true, default: [] },
    'elicit-modes': { type: 'string', default: '' },
  },
});
const url = positionals[0];
const label = opts.label;
const callTimeout = 20_000;

const summary = {
  label,
  ok: false,
  failures: [],
  sessionId: null,
  protocolVersion: null,
  tools: [],
  calls: [],
  samplingRequests: 0,
  rootsRequests: 0,
  elicitationRequests: 0,
  elicitations: [],
  errors: [],
};

function fail(msg) {
  summary.failures.push(msg);
}

function finish() {
  summary.ok = summary.failures.length === 0;
  process.stdout.write(JSON.stringify(summary) + '\n');
  process.exit(summary.ok ? 0 : 1);
}

setTimeout(() => {
  fail(`deadline of ${opts.deadline} ms passed`);
  finish();
}, Number(opts.deadline)).unref();

const capabilities = {};
for (const c of opts.caps.split(',').filter(Boolean)) {
  capabilities[c] = c === 'roots' ? { listChanged: true } : {};
}
const modes = opts['elicit-modes'].split(',').filter(Boolean);
if (modes.length > 0) capabilities.elicitation = Object.fromEntries(modes.map((m) => [m, {}]));
const client = new Client({ name: `stelae-ts-session-${label}`, version: '1.0.0' }, { capabilities });
client.onerror = (err) => summary.errors.push(String(err?.message ?? err));
if (capabilities.sampling) {
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    summary.samplingRequests++;
    return { model: 'stelae-test-model', role: 'assistant', content: { type: 'text', text: `sampled by ${label}` } };
  });
}
if (capabilities.roots) {
  client.setRequestHandler(ListRootsRequestSchema, async () => {
    summary.rootsRequests++;
    return { roots: opts.root.map((p) => ({ uri: pathToFileURL(p).href, name: p })) };
  });
}
if (capabilities.elicitation) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    summary.elicitationRequests++;
    summary.elicitations.push(request.params);
    return request.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: {} };
  });
}

// --header adds a header to every request (a bearer token: the user).
const headers = {};
for (const h of opts.header) {
  const i = h.indexOf(':');
  if (i > 0) headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
}
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
try {
  await client.connect(transport, { timeout: callTimeout });
  summary.sessionId = transport.sessionId ?? null;
  summary.protocolVersion = transport.protocolVersion ?? null;
  const want = Number(opts['wait-roots']);
  for (let i = 0; i < 200 && summary.rootsRequests < want; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  if (summary.rootsRequests < want) fail(`the server asked for roots ${summary.rootsRequests} time(s), want ${want}`);
  summary.tools = (await client.listTools(undefined, { timeout: callTimeout })).tools.map((t) => t.name);
  const pause = Number(opts['pause-ms']);
  for (const spec of Array.from({ length: Number(opts.repeat) }, () => opts.call).flat()) {
    if (pause > 0) await new Promise((r) => setTimeout(r, pause));
    const sp = spec.indexOf(' ');
    const name = sp < 0 ? spec : spec.slice(0, sp);
    const args = sp < 0 ? {} : JSON.parse(spec.slice(sp + 1));
    try {
      const r = await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: callTimeout });
      summary.calls.push({ name, result: r });
    } catch (err) {
      summary.calls.push({ name, error: String(err?.message ?? err) });
    }
  }
  if (!opts['no-delete']) await transport.terminateSession();
  await client.close();
} catch (err) {
  fail(String(err?.stack ?? err));
}
finish();
