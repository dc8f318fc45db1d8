// A stdio-only MCP client for wraptool's integration test
// TestConnectNodeClient (integration/connect_test.go): the official
// TypeScript SDK's StdioClientTransport starting `wraptool connect`, as a
// desktop client would from its config entry.
//
//   node connect.mjs --command /path/to/wraptool --config /path/to/config.yaml --tool NAME [--args a,b] [--wait-ms N] [--quiet-ms N]
//
// It prints one JSON object per line on stdout, in this order:
//
//   {"event":"tools","transport":"stdio","phase":"before","names":[...]}
//   {"event":"call","transport":"stdio","tool":NAME,"isError":b,"text":"...","structuredContent":{...}}
//   {"event":"ready"}                       the caller now changes the server's config
//   {"event":"list_changed","transport":"stdio","count":N}   notifications seen
//   {"event":"tools","transport":"stdio","phase":"after","names":[...]}
//   {"event":"done"}
//
// Waiting for notifications/tools/list_changed is bounded by --wait-ms (count
// 0 when the wait is over); after the first one it waits --quiet-ms more, so
// a duplicate would be counted too. Any failure prints {"event":"error",...}
// and exits 1. wraptool connect's own log goes to this script's stderr.
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    command: { type: 'string' },
    config: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '' },
    'wait-ms': { type: 'string', default: '20000' },
    'quiet-ms': { type: 'string', default: '500' },
  },
});
if (!opts.command || !opts.config || !opts.tool) {
  process.stderr.write('usage: node connect.mjs --command WRAPTOOL --config CONFIG --tool NAME [--args a,b] [--wait-ms N] [--quiet-ms N]\n');
  process.exit(2);
}
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
setTimeout(() => fail('deadline', new Error(`connect.mjs still running after ${waitMs + 30000} ms`)), waitMs + 30000).unref();

let count = 0;
let wake = () => {};
const client = new Client({ name: 'wraptool-node-stdio', version: '1.0.0' }, { capabilities: {} });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  count++;
  wake();
});

// The client config entry `up` prints: command and args, nothing else (no
// token: connect reads it from the config).
const transport = new StdioClientTransport({
  command: opts.command,
  args: ['--config', opts.config, '--log-level', 'debug', 'connect'],
  stderr: 'inherit',
});
try {
  await client.connect(transport);
  const listed = await client.listTools();
  emit({ event: 'tools', transport: 'stdio', phase: 'before', names: listed.tools.map((t) => t.name).sort() });
  const res = await client.callTool({ name: opts.tool, arguments: { args: callArgs } });
  emit({
    event: 'call',
    transport: 'stdio',
    tool: opts.tool,
    isError: res.isError ?? false,
    text: res.content?.find((c) => c.type === 'text')?.text ?? '',
    contentItems: res.content?.length ?? 0,
    structuredContent: res.structuredContent ?? null,
  });
} catch (err) {
  fail('before', err);
}

emit({ event: 'ready' });
const seen = await new Promise((resolve) => {
  let quiet;
  const finish = () => {
    clearTimeout(quiet);
    clearTimeout(hard);
    resolve(count);
  };
  const hard = setTimeout(finish, waitMs);
  wake = () => {
    clearTimeout(quiet);
    quiet = setTimeout(finish, quietMs);
  };
  if (count > 0) wake();
});
emit({ event: 'list_changed', transport: 'stdio', count: seen });

try {
  const listed = await client.listTools();
  emit({ event: 'tools', transport: 'stdio', phase: 'after', names: listed.tools.map((t) => t.name).sort() });
} catch (err) {
  fail('after', err);
}
await client.close();
emit({ event: 'done' });
process.exit(0);
