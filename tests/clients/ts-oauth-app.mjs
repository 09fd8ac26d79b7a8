// ts-oauth-app.mjs is a connector as ChatGPT or claude.ai is one: the
// official TypeScript SDK client with an OAuthClientProvider (its own
// auth() machinery: discovery, registration or a client metadata document,
// PKCE, authorization code, refresh), state persisted in a file so that a
// second run continues after the bridge restarted.
//
//   node ts-oauth-app.mjs URL STATE_FILE PASSPHRASE [--cimd URL] [--stale-access]
//
// The operator's approval is done over HTTP as a browser would: GET the
// approval page, POST its form with the passphrase (cookie and CSRF token
// kept). --stale-access replaces the saved access token with a bad one, so
// the SDK must refresh. It lists tools, calls echo, and prints one JSON
// summary, with every HTTP request the SDK made.

import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const { values: opts, positionals } = parseArgs({ allowPositionals: true, options: {
  cimd: { type: 'string' }, 'stale-access': { type: 'boolean', default: false } } });
const [url, stateFile, passphrase] = positionals;
const watchdog = setTimeout(() => { console.log(JSON.stringify({ ok: false, failure: 'deadline' })); process.exit(1); }, 60000);
const redirectUrl = 'https://client.example/callback';

let state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : {};
const save = () => writeFileSync(stateFile, JSON.stringify(state));
if (opts['stale-access'] && state.tokens) {
  state.tokens = { ...state.tokens, access_token: 'stale.' + state.tokens.access_token.slice(6) };
}

const steps = [];
const logged = async (input, init) => {
  const res = await fetch(input, init);
  steps.push({ method: init?.method ?? 'GET', url: String(input instanceof Request ? input.url : input), status: res.status });
  return res;
};

let code;
// approve plays the operator at the approval page.
async function approve(authURL) {
  const page = await fetch(authURL, { redirect: 'manual' });
  const html = await page.text();
  if (page.status !== 200) throw new Error(`approval page: ${page.status} ${html.slice(0, 300)}`);
  const cookie = (page.headers.get('set-cookie') || '').split(';')[0];
  const field = (name) => {
    const m = html.match(new RegExp(`name="${name}" value="([^"]*)"`));
    if (!m) throw new Error(`approval page has no ${name}`);
    return m[1].replaceAll('&amp;', '&').replaceAll('&#43;', '+').replaceAll('&#34;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>');
  };
  const shown = ['client', 'destination', 'redirect-host'].map((id) => (html.match(new RegExp(`id="${id}">([^<]*)<`)) || [])[1]);
  const form = new URLSearchParams({ query: field('query'), csrf: field('csrf'), passphrase, decision: 'approve' });
  const origin = new URL(authURL).origin;
  const res = await fetch(origin + '/oauth/authorize', { method: 'POST', redirect: 'manual', body: form,
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin } });
  const loc = res.headers.get('location');
  if (res.status !== 302 || !loc) throw new Error(`approval: ${res.status} ${await res.text()}`);
  const back = new URL(loc);
  if (back.searchParams.get('iss') !== origin) throw new Error(`redirect without iss: ${loc}`);
  code = back.searchParams.get('code');
  out.page = { client: shown[0], destination: shown[1], redirectHost: shown[2] };
}

const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: 'ts-oauth-app', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientMetadataUrl: opts.cimd,
  clientInformation: () => state.client,
  saveClientInformation: (info) => { state.client = info; save(); },
  tokens: () => state.tokens,
  saveTokens: (t) => { state.tokens = t; out.tokensSaved = (out.tokensSaved ?? 0) + 1; save(); },
  redirectToAuthorization: async (u) => { out.authorized = true; await approve(u.toString()); },
  saveCodeVerifier: (v) => { state.verifier = v; save(); },
  codeVerifier: () => state.verifier,
};

const out = { ok: false, steps };
try {
  const client = new Client({ name: 'ts-oauth-app', version: '1.0.0' });
  let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: logged });
  try {
    await client.connect(transport);
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || !code) throw err;
    await transport.finishAuth(code);
    transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: logged });
    await client.connect(transport);
  }
  out.clientId = state.client?.client_id;
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const res = await client.callTool({ name: 'echo', arguments: { text: 'approved' } });
  out.echo = res.content?.[0]?.text;
  await client.close();
  out.ok = true;
} catch (err) {
  out.failure = String(err?.stack ?? err);
}
clearTimeout(watchdog);
console.log(JSON.stringify(out));
process.exit(out.ok ? 0 : 1);
