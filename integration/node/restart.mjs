// A third-party MCP client for wraptool's integration test
// TestNodeClientSurvivesRestart (integration/sessions_restart_test.go): the
// official TypeScript SDK on Streamable HTTP, kept running while the server
// restarts, with its default reconnection options.
//
//   WRAPTOOL_TOKEN=... node restart.mjs --url http://127.0.0.1:PORT --tool NAME [--wait-ms N]
//
// It prints one JSON object per line on stdout, in this order:
//
//   {"event":"ready","text":SESSION_ID}       listed; the caller now restarts the server
//                                             and then writes one line on stdin
//   {"event":"call","tool":NAME,"isError":b,"text":SESSION_ID}   a call after the restart
//   {"event":"called"}                        the caller now changes the server's config
//   {"event":"list_changed","count":N}        notifications seen within --wait-ms
//   {"event":"done"}
//
// Any failure prints {"event":"error",...} and exits 1. The bearer token
// comes from $WRAPTOOL_TOKEN, so it never shows in a process listing.
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    tool: { type: 'string' },
    'wait-ms': { type: 'string', default: '20000' },
  },
});
const base = opts.url.replace(/\/+$/, '');
const token = process.env.WRAPTOOL_TOKEN ?? '';
const waitMs = Number(opts['wait-ms']);

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function fail(where, err) {
  emit({ event: 'error', where, message: String(err?.stack ?? err) });
  process.exit(1);
}

setTimeout(() => fail('deadline', new Error(`restart.mjs still running after ${3 * waitMs} ms`)), 3 * waitMs).unref();

let count = 0;
let wake = () => {};
const client = new Client({ name: 'wraptool-node-restart', version: '1.0.0' }, { capabilities: {} });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  count++;
  wake();
});
const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
  requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
});
try {
  await client.connect(transport);
  await client.listTools();
} catch (err) {
  fail('connect', err);
}
emit({ event: 'ready', text: transport.sessionId });

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
await lines.next();

try {
  const res = await client.callTool({ name: opts.tool, arguments: { args: ['origin'] } });
  emit({ event: 'call', tool: opts.tool, isError: res.isError ?? false, text: transport.sessionId });
} catch (err) {
  fail('call', err);
}
emit({ event: 'called' });
await new Promise((resolve) => {
  const hard = setTimeout(resolve, waitMs);
  wake = () => {
    clearTimeout(hard);
    resolve();
  };
  if (count > 0) wake();
});
emit({ event: 'list_changed', count });
await client.close().catch(() => {});
emit({ event: 'done' });
process.exit(0);
