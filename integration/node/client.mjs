// A third-party MCP client for wraptool's integration test TestNodeClient
// (integration/node_test.go): the official TypeScript SDK, on both of
// wraptool's transports.
//
//   WRAPTOOL_TOKEN=... node client.mjs --url http://127.0.0.1:PORT --tool NAME [--args a,b] [--wait-ms N]
//
// It prints one JSON object per line on stdout, in this order:
//
//   {"event":"unauthorized","transport":"streamable","status":401,...}  a connect without the token was refused
//   {"event":"tools","transport":"sse","phase":"before","names":[...]}
//   {"event":"call","transport":"sse","tool":NAME,"isError":b,"text":"...","structuredContent":{...}}
//   {"event":"tools","transport":"streamable","phase":"before","names":[...]}
//   {"event":"call","transport":"streamable",...}
//   {"event":"ready"}                       the caller now changes the server's config
//   {"event":"list_changed","transport":"streamable"|"sse","count":N}   one per transport, N notifications seen
//   {"event":"tools","transport":"streamable","phase":"after","names":[...]}
//   {"event":"done"}
//
// Waiting for notifications/tools/list_changed is bounded by --wait-ms; a
// transport that saw none reports count 0 when the wait is over. After the
// first notification on a transport it waits a further quiet period
// (--quiet-ms) so that a duplicate notification would be counted too. Any
// failure prints {"event":"error",...} and exits 1. The bearer token comes
// from $WRAPTOOL_TOKEN (empty: no Authorization header), so it never shows in
// a process listing.
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '' },
    'wait-ms': { type: 'string', default: '20000' },
    'quiet-ms': { type: 'string', default: '500' },
  },
});
if (!opts.url || !opts.tool) {
  process.stderr.write('usage: node client.mjs --url BASE_URL --tool NAME [--args a,b] [--wait-ms N] [--quiet-ms N]\n');
  process.exit(2);
}
const base = opts.url.replace(/\/+$/, '');
const token = process.env.WRAPTOOL_TOKEN ?? '';
const waitMs = Number(opts['wait-ms']);
const quietMs = Number(opts['quiet-ms']);
const callArgs = opts.args === '' ? [] : opts.args.split(',');

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function fail(where, err) {
  emit({ event: 'error', where, message: String(err?.stack ?? err) });
  process.exit(1);
}

// A whole-run guard, so the script never outlives its caller's patience.
setTimeout(() => fail('deadline', new Error(`client.mjs still running after ${waitMs + 30000} ms`)), waitMs + 30000).unref();

const headers = token ? { Authorization: `Bearer ${token}` } : {};

// listChangedWatch counts tools/list_changed on one client and resolves
// once the first arrived and quietMs passed without another, or at the
// deadline given to wait().
function listChangedWatch(client) {
  let count = 0;
  let wake = () => {};
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    count++;
    wake();
  });
  return {
    wait(deadline) {
      return new Promise((resolve) => {
        let quiet;
        const finish = () => {
          clearTimeout(quiet);
          clearTimeout(hard);
          resolve(count);
        };
        const hard = setTimeout(finish, Math.max(0, deadline - Date.now()));
        wake = () => {
          clearTimeout(quiet);
          quiet = setTimeout(finish, quietMs);
        };
        if (count > 0) wake();
      });
    },
  };
}

async function connect(name, transport) {
  const client = new Client({ name: `wraptool-node-${name}`, version: '1.0.0' }, { capabilities: {} });
  const watch = listChangedWatch(client);
  await client.connect(transport);
  return { client, watch };
}

async function listAndCall(name, client) {
  const listed = await client.listTools();
  emit({ event: 'tools', transport: name, phase: 'before', names: listed.tools.map((t) => t.name).sort() });
  const res = await client.callTool({ name: opts.tool, arguments: { args: callArgs } });
  emit({
    event: 'call',
    transport: name,
    tool: opts.tool,
    isError: res.isError ?? false,
    text: res.content?.find((c) => c.type === 'text')?.text ?? '',
    contentItems: res.content?.length ?? 0,
    structuredContent: res.structuredContent ?? null,
  });
}

// 1. Without the token (when the server wants one) the SDK's connect fails.
if (token) {
  const client = new Client({ name: 'wraptool-node-noauth', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    fail('unauthorized', new Error('connect without a token succeeded'));
  } catch (err) {
    emit({ event: 'unauthorized', transport: 'streamable', status: err?.code ?? null, message: String(err?.message ?? err) });
  } finally {
    await client.close().catch(() => {});
  }
}

// 2. Legacy SSE at /sse: list and call; the session stays open to see the
// list_changed as well.
let sse;
try {
  sse = await connect('sse', new SSEClientTransport(new URL(`${base}/sse`), { requestInit: { headers } }));
  await listAndCall('sse', sse.client);
} catch (err) {
  fail('sse', err);
}

// 3. Streamable HTTP at /mcp: list and call, then wait for the reload.
let http;
try {
  http = await connect('streamable', new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  await listAndCall('streamable', http.client);
} catch (err) {
  fail('streamable', err);
}

emit({ event: 'ready' });
const deadline = Date.now() + waitMs;
const [httpCount, sseCount] = await Promise.all([http.watch.wait(deadline), sse.watch.wait(deadline)]);
emit({ event: 'list_changed', transport: 'streamable', count: httpCount });
emit({ event: 'list_changed', transport: 'sse', count: sseCount });

try {
  const listed = await http.client.listTools();
  emit({ event: 'tools', transport: 'streamable', phase: 'after', names: listed.tools.map((t) => t.name).sort() });
} catch (err) {
  fail('streamable-after', err);
}

await Promise.allSettled([http.client.close(), sse.client.close()]);
emit({ event: 'done' });
process.exit(0);
