// A stdio MCP client for wraptool's integration test
// TestStdioClientsSurviveRestart (integration/clients_restart_test.go): the
// official TypeScript SDK's stdio client starting a command that speaks MCP
// on stdio and reaches wraptool over HTTP (`wraptool connect`, mcp-remote,
// supergateway), kept running while the server restarts. The command itself
// is never restarted: whatever survives, survives inside it.
//
//   node stdio_restart.mjs --argv '["/path/to/cmd","arg",...]' --tool NAME [--args a,b]
//       [--expect TOOL] [--retry-ms N] [--wait-ms N]
//
// It prints one JSON object per line on stdout, in this order:
//
//   {"event":"tools","phase":"before","names":[...]}
//   {"event":"call","phase":"before","tool":NAME,"isError":b,"text":"..."}
//   {"event":"ready"}                          the caller now restarts the server
//                                              and then writes one line on stdin
//   {"event":"call","phase":"after","tool":NAME,"isError":b,"text":"..."}
//   {"event":"retried","count":N,"message":"..."}   calls that failed first (see --retry-ms),
//                                              and the first one's error
//   {"event":"called"}                         the caller now changes the server's config
//   {"event":"list_changed","count":N}         notifications seen since "called", until
//                                              one after which tools/list holds --expect,
//                                              or --wait-ms is over
//   {"event":"tools","phase":"after","names":[...]}   that last listing
//   {"event":"done"}
//
// Any failure prints {"event":"error","where":...,"message":...}, the
// message ending with what the command wrote to its stderr (which this
// script's stderr passes on as it comes), and exits 1. The command gets
// this script's whole environment (the caller sets HOME, the token variable
// and the like), so a token can stay off every command line.
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    argv: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '' },
    'wait-ms': { type: 'string', default: '20000' },
    expect: { type: 'string', default: '' },
    'retry-ms': { type: 'string', default: '0' },
  },
});
let argv;
try {
  argv = JSON.parse(opts.argv ?? '');
} catch {
  argv = null;
}
if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string') || !opts.tool) {
  process.stderr.write('usage: node stdio_restart.mjs --argv JSON_ARRAY --tool NAME [--args a,b] [--wait-ms N]\n');
  process.exit(2);
}
const waitMs = Number(opts['wait-ms']);
const callArgs = opts.args === '' ? [] : opts.args.split(',');

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

let childStderr = '';
let transport;

async function fail(where, err) {
  emit({ event: 'error', where, message: `${err?.stack ?? err}\n--- the command's stderr:\n${childStderr.slice(-20000)}` });
  await transport?.close().catch(() => {});
  process.exit(1);
}

// A whole-run guard, so the script never outlives its caller's patience.
setTimeout(() => fail('deadline', new Error(`stdio_restart.mjs still running after ${4 * waitMs} ms`)), 4 * waitMs).unref();

let count = 0;
let wake = () => {};
const client = new Client({ name: 'wraptool-stdio-restart', version: '1.0.0' }, { capabilities: {} });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  count++;
  wake();
});
transport = new StdioClientTransport({
  command: argv[0],
  args: argv.slice(1),
  env: { ...process.env },
  stderr: 'pipe',
});
transport.stderr?.on('data', (chunk) => {
  childStderr += chunk.toString();
  process.stderr.write(chunk);
});

async function call(phase) {
  const res = await client.callTool({ name: opts.tool, arguments: { args: callArgs } });
  emit({
    event: 'call',
    phase,
    tool: opts.tool,
    isError: res.isError ?? false,
    text: res.content?.find((c) => c.type === 'text')?.text ?? '',
  });
}

try {
  await client.connect(transport);
  const listed = await client.listTools();
  emit({ event: 'tools', phase: 'before', names: listed.tools.map((t) => t.name).sort() });
  await call('before');
} catch (err) {
  await fail('before', err);
}
emit({ event: 'ready' });

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
await lines.next();

// With --retry-ms, a failed call is tried again every 250 ms until that
// much time has passed: a legacy SSE client posts to its old session until
// its stream has reconnected.
const retryUntil = Date.now() + Number(opts['retry-ms']);
let retries = 0;
let firstError = '';
for (;;) {
  try {
    await call('after');
    break;
  } catch (err) {
    if (Date.now() >= retryUntil) await fail('after', err);
    if (retries === 0) firstError = String(err?.message ?? err);
    retries++;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
emit({ event: 'retried', count: retries, message: firstError });
emit({ event: 'called' });
// Notifications from the restart itself (a bridge that re-lists on
// reconnecting) are not the change the caller is about to make: wait for
// one after which the listing holds --expect, and count only those since
// "called".
count = 0;
let names = [];
const deadline = Date.now() + waitMs;
try {
  for (;;) {
    const seen = count;
    await new Promise((resolve) => {
      const hard = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      wake = () => {
        clearTimeout(hard);
        resolve();
      };
      if (count > seen) wake();
    });
    names = (await client.listTools()).tools.map((t) => t.name).sort();
    if (count === seen || !opts.expect || names.includes(opts.expect) || Date.now() >= deadline) break;
  }
} catch (err) {
  await fail('list after', err);
}
emit({ event: 'list_changed', count });
emit({ event: 'tools', phase: 'after', names });
await transport.close().catch(() => {});
emit({ event: 'done' });
process.exit(0);
