// A legacy SSE client across a server restart, for wraptool's integration
// test TestNodeSSESurvivesRestart (integration/sse_restart_test.go): the
// official TypeScript SDK's SSEClientTransport, whose EventSource reconnects
// a dropped stream on its own and moves to the endpoint the new stream
// announces, without initializing again, as Claude Code, Gemini CLI and
// supergateway do.
//
//   WRAPTOOL_TOKEN=… node sse_restart.mjs --url http://127.0.0.1:PORT --tool NAME [--args a,b] [--wait-ms N]
//
// It prints one JSON object per line on stdout, in this order:
//
//   {"event":"call","phase":"before","isError":b,"text":"..."}
//   {"event":"ready"}            the caller now restarts the server, then writes a line to stdin
//   {"event":"reconnected"}      the stream announced a new message endpoint
//   {"event":"call","phase":"after","isError":b,"text":"..."}
//   {"event":"list_changed","count":N}   after the caller changed the config (bounded by --wait-ms)
//   {"event":"done"}
//
// Any failure prints {"event":"error",...} and exits 1.
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '' },
    'wait-ms': { type: 'string', default: '20000' },
  },
});
if (!opts.url || !opts.tool) {
  process.stderr.write('usage: node sse_restart.mjs --url URL --tool NAME [--args a,b] [--wait-ms N]\n');
  process.exit(2);
}
const waitMs = Number(opts['wait-ms']);
const callArgs = opts.args === '' ? [] : opts.args.split(',');
const token = process.env.WRAPTOOL_TOKEN ?? '';

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function fail(where, err) {
  emit({ event: 'error', where, message: String(err?.stack ?? err) });
  process.exit(1);
}

setTimeout(() => fail('deadline', new Error(`sse_restart.mjs still running after ${3 * waitMs} ms`)), 3 * waitMs).unref();

const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));

const transport = new SSEClientTransport(new URL(`${opts.url}/sse`), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'wraptool-node-sse-restart', version: '1.0.0' }, { capabilities: {} });
// The stream's drop is reported here; the SDK keeps the client, and its
// EventSource reconnects.
client.onerror = (err) => process.stderr.write(`client error (expected while the server restarts): ${err}\n`);
let changed = 0;
let wake = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  wake();
});

async function call(phase) {
  const res = await client.callTool({ name: opts.tool, arguments: { args: callArgs } });
  emit({ event: 'call', phase, isError: res.isError ?? false, text: res.content?.find((c) => c.type === 'text')?.text ?? '' });
}

// The transport keeps the endpoint the stream last announced in a private
// field; the SDK offers no event for a reconnect.
const endpoint = () => transport._endpoint?.href;

try {
  await client.connect(transport);
  await call('before');
} catch (err) {
  fail('before', err);
}
const first = endpoint();
emit({ event: 'ready' });
await nextLine();
const deadline = Date.now() + waitMs;
while (endpoint() === first) {
  if (Date.now() > deadline) fail('reconnect', new Error(`the stream announced no new endpoint within ${waitMs} ms`));
  await new Promise((r) => setTimeout(r, 50));
}
emit({ event: 'reconnected' });
try {
  await call('after');
} catch (err) {
  fail('after', err);
}
await nextLine();
const count = await new Promise((resolve) => {
  const hard = setTimeout(() => resolve(changed), Math.max(0, deadline + waitMs - Date.now()));
  wake = () => {
    clearTimeout(hard);
    resolve(changed);
  };
  if (changed > 0) wake();
});
emit({ event: 'list_changed', count });
emit({ event: 'done' });
await client.close().catch(() => {});
process.exit(0);
