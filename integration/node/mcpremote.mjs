// A client in the wild for wraptool's integration test TestWild…
// (integration/wild_test.go): the official TypeScript SDK's stdio client
// driving mcp-remote, the stdio-to-HTTP bridge that stdio-only MCP clients
// (desktop apps, editors) use to reach a server over HTTP. mcp-remote is
// started as a desktop client's config would start it:
//
//   mcp-remote URL --header "Authorization:Bearer ${WRAPTOOL_TOKEN}"
//
// with the literal ${WRAPTOOL_TOKEN}, which mcp-remote expands from its own
// environment, so the token never shows in a process listing. (A loopback
// http:// URL needs no --allow-http.)
//
//   WRAPTOOL_TOKEN=... node mcpremote.mjs --url http://127.0.0.1:PORT/mcp --tool NAME [--args a,b]
//       [--slow-tool NAME --slow-args 9s --timeout-ms 7000] [--mcp-remote ENTRY]
//
// ENTRY is mcp-remote's script (dist/proxy.js); by default the one in this
// folder's node_modules.
//
// It prints one JSON object per line on stdout:
//
//   {"event":"tools","names":[...]}                          after tools/list
//   {"event":"call","tool":NAME,"isError":b,"text":"..."}     after tools/call
//   {"event":"progress","progress":5,"total":60,"message":"..."}   each note of the slow call
//   {"event":"slow_call","isError":b,"text":"...","ms":N}      the slow call's answer (with --slow-tool)
//   {"event":"done"}
//
// The slow call asks for progress and lets each note reset its timeout
// (--timeout-ms), as clients with short request timeouts do: it succeeds
// only if progress keeps coming. A connect that fails (a wrong token)
// prints {"event":"connect_failed","message":"...","stderr":"..."} with
// what mcp-remote printed, and exits 1; any other failure prints
// {"event":"error",...} and exits 1. mcp-remote keeps its state in
// $MCP_REMOTE_CONFIG_DIR (default ~/.mcp-auth): the caller points HOME
// and that variable at a temporary folder.
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    tool: { type: 'string' },
    args: { type: 'string', default: '' },
    'slow-tool': { type: 'string', default: '' },
    'slow-args': { type: 'string', default: '' },
    'timeout-ms': { type: 'string', default: '8000' },
    'deadline-ms': { type: 'string', default: '90000' },
    'mcp-remote': { type: 'string', default: '' },
  },
});
if (!opts.url || !opts.tool) {
  process.stderr.write('usage: node mcpremote.mjs --url URL --tool NAME [--args a,b] [--slow-tool NAME --slow-args a,b --timeout-ms N]\n');
  process.exit(2);
}
const split = (s) => (s === '' ? [] : s.split(','));

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

let remoteStderr = '';
let transport;

async function fail(where, err) {
  emit({ event: 'error', where, message: String(err?.stack ?? err), stderr: remoteStderr });
  await transport?.close().catch(() => {});
  process.exit(1);
}

// A whole-run guard, so the script never outlives its caller's patience.
setTimeout(() => fail('deadline', new Error(`mcpremote.mjs still running after ${opts['deadline-ms']} ms`)),
  Number(opts['deadline-ms'])).unref();

// mcp-remote's entry point as its package.json names it, run with this
// node rather than through a node_modules/.bin shim and its #! line.
function installedEntry() {
  const pkgDir = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', 'mcp-remote');
  const bin = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).bin;
  return join(pkgDir, typeof bin === 'string' ? bin : bin['mcp-remote']);
}
const entry = opts['mcp-remote'] || installedEntry();

transport = new StdioClientTransport({
  command: process.execPath,
  args: [entry, opts.url, '--header', 'Authorization:Bearer ${WRAPTOOL_TOKEN}'],
  // The whole environment: WRAPTOOL_TOKEN, and HOME and
  // MCP_REMOTE_CONFIG_DIR pointing at the caller's temporary folder.
  env: { ...process.env },
  stderr: 'pipe',
});
transport.stderr?.on('data', (chunk) => {
  remoteStderr += chunk.toString();
});

const client = new Client({ name: 'wraptool-mcpremote', version: '1.0.0' }, { capabilities: {} });
try {
  await client.connect(transport);
} catch (err) {
  // Let mcp-remote's last lines arrive before reporting them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  emit({ event: 'connect_failed', message: String(err?.message ?? err), stderr: remoteStderr });
  await transport.close().catch(() => {});
  process.exit(1);
}

try {
  const listed = await client.listTools();
  emit({ event: 'tools', names: listed.tools.map((t) => t.name).sort() });
  const res = await client.callTool({ name: opts.tool, arguments: { args: split(opts.args) } });
  emit({
    event: 'call',
    tool: opts.tool,
    isError: res.isError ?? false,
    text: res.content?.find((c) => c.type === 'text')?.text ?? '',
  });
  if (opts['slow-tool']) {
    const began = Date.now();
    const slow = await client.callTool({ name: opts['slow-tool'], arguments: { args: split(opts['slow-args']) } }, undefined, {
      timeout: Number(opts['timeout-ms']),
      resetTimeoutOnProgress: true,
      onprogress: (p) => emit({ event: 'progress', progress: p.progress, total: p.total ?? null, message: p.message ?? '' }),
    });
    emit({
      event: 'slow_call',
      isError: slow.isError ?? false,
      text: slow.content?.find((c) => c.type === 'text')?.text ?? '',
      ms: Date.now() - began,
    });
  }
} catch (err) {
  await fail('session', err);
}

await client.close().catch(() => {});
emit({ event: 'done' });
process.exit(0);
