// ts-oauth.mjs connects the official TypeScript SDK client to a protected
// bridge endpoint and lets the SDK do its own OAuth discovery, the way a
// connector does: the 401's WWW-Authenticate names the protected-resource
// metadata, that names the authorization server, whose metadata gives the
// token endpoint; the client_credentials grant (ClientCredentialsProvider)
// gets a token for the resource, and the SDK retries with it.
//
//   node ts-oauth.mjs URL CLIENT_ID CLIENT_SECRET
//
// It lists the tools, calls echo, and prints one JSON summary with every
// HTTP request the SDK made (method, URL, status), in order.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';

const [url, clientId, clientSecret] = process.argv.slice(2);
const watchdog = setTimeout(() => { console.log(JSON.stringify({ ok: false, failure: 'deadline' })); process.exit(1); }, 60000);

const steps = [];
const logged = async (input, init) => {
  const res = await fetch(input, init);
  steps.push({ method: init?.method ?? 'GET', url: String(input instanceof Request ? input.url : input), status: res.status });
  return res;
};

const out = { ok: false, steps };
try {
  const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope: 'mcp' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider, fetch: logged });
  const client = new Client({ name: 'ts-oauth', version: '1.0.0' });
  await client.connect(transport);
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const res = await client.callTool({ name: 'echo', arguments: { text: 'through oauth' } });
  out.echo = res.content?.[0]?.text;
  out.token = authProvider.tokens()?.access_token ? 'present' : 'absent';
  await transport.terminateSession();
  await client.close();
  out.ok = true;
} catch (err) {
  out.failure = String(err?.stack ?? err);
}
clearTimeout(watchdog);
console.log(JSON.stringify(out));
process.exit(out.ok ? 0 : 1);
