// A stdio MCP server on the TypeScript SDK v2 server package, for issue 38's
// tests: "reject" (the default) serves the 2026-07-28 era only, refusing
// initialize (legacy: 'reject'); "dual" serves both eras (legacy: 'serve').
// Tools: echo; sample (asks the client for a sampling answer by MRTR and
// returns it); confirm (asks an elicitation, returns the answer); twostep
// (samples, then confirms, carrying what it sampled in its requestState);
// progress (reports steps of progress, then answers); bump (changes the
// resource mem://counter, which subscribers hear of); addtool (adds a
// tool, which list-change listeners hear of); exit (the process exits
// without answering); hang (answers only when cancelled, saying so on
// stderr).
import { McpServer, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const legacy = process.argv[2] === 'dual' ? 'serve' : 'reject';

serveStdio(() => {
    const server = new McpServer({ name: 'ts-v2-stdio', version: '1.0.0' },
        { capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: true } } });
    let counter = 0;
    server.registerResource('counter', 'mem://counter', { mimeType: 'text/plain' },
        async (uri) => ({ contents: [{ uri: uri.href, text: String(counter) }] }));
    server.registerTool('bump', { description: 'changes mem://counter', inputSchema: z.object({}) },
        async () => {
            counter++;
            await server.server.sendResourceUpdated({ uri: 'mem://counter' });
            return { content: [{ type: 'text', text: `counter ${counter}` }] };
        });
    server.registerTool('addtool', { description: 'adds a tool', inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => {
            server.registerTool(name, { description: 'added', inputSchema: z.object({}) },
                async () => ({ content: [{ type: 'text', text: name }] }));
            return { content: [{ type: 'text', text: `added ${name}` }] };
        });
    server.registerTool('echo', { description: 'echo', inputSchema: z.object({ message: z.string() }) },
        async ({ message }) => ({ content: [{ type: 'text', text: message }] }));
    server.registerTool('sample', { description: 'asks the client for a sampling answer', inputSchema: z.object({ prompt: z.string() }) },
        async ({ prompt }, ctx) => {
            const got = inputResponse(ctx.mcpReq.inputResponses, 'sample');
            if (got.kind === 'sampling') {
                const c = got.result.content;
                return { content: [{ type: 'text', text: 'sampled: ' + (c.type === 'text' ? c.text : JSON.stringify(c)) }] };
            }
            return inputRequired({ inputRequests: { sample: inputRequired.createMessage({
                messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 20 }) } });
        });
    server.registerTool('confirm', { description: 'asks the user to confirm', inputSchema: z.object({ what: z.string() }) },
        async ({ what }, ctx) => {
            const got = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
            if (got.kind === 'elicit') {
                return { content: [{ type: 'text', text: `${what}: ${got.action} ${JSON.stringify(got.content ?? {})}` }] };
            }
            return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: `Confirm ${what}?`,
                requestedSchema: z.object({ ok: z.boolean() }) }) } });
        });
    server.registerTool('twostep', { description: 'samples, then confirms, carrying the sample in requestState', inputSchema: z.object({ prompt: z.string() }) },
        async ({ prompt }, ctx) => {
            const state = ctx.mcpReq.requestState();
            if (typeof state !== 'string') {
                return inputRequired({ inputRequests: { s: inputRequired.createMessage({
                    messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 20 }) }, requestState: 'step1' });
            }
            if (state === 'step1') {
                const got = inputResponse(ctx.mcpReq.inputResponses, 's');
                if (got.kind !== 'sampling') throw new Error('step1 without the sample');
                const text = got.result.content.type === 'text' ? got.result.content.text : '?';
                return inputRequired({ inputRequests: { c: inputRequired.elicit({ message: `Keep ${text}?`,
                    requestedSchema: z.object({ ok: z.boolean() }) }) }, requestState: 'step2:' + text });
            }
            const got = inputResponse(ctx.mcpReq.inputResponses, 'c');
            if (!state.startsWith('step2:') || got.kind !== 'elicit') throw new Error('unexpected state ' + state);
            return { content: [{ type: 'text', text: `twostep: ${state.slice(6)} then ${got.action}` }] };
        });
    server.registerTool('progress', { description: 'reports progress', inputSchema: z.object({ steps: z.number() }) },
        async ({ steps }, ctx) => {
            for (let i = 1; i <= steps; i++) {
                await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: ctx.mcpReq._meta?.progressToken, progress: i, total: steps } });
            }
            return { content: [{ type: 'text', text: `progressed ${steps}` }] };
        });
    server.registerTool('exit', { description: 'exits without answering', inputSchema: z.object({}) },
        async () => { process.exit(3); });
    server.registerTool('hang', { description: 'never answers', inputSchema: z.object({}) },
        async (_args, ctx) => new Promise((resolve) => {
            ctx.mcpReq.signal.addEventListener('abort', () => {
                process.stderr.write('hang: cancelled\n');
                resolve({ content: [{ type: 'text', text: 'cancelled' }] });
            });
        }));
    return server;
}, { legacy });
