// A person answering wraptool's elicitation in the official TypeScript SDK
// client, for TestElicitationNodeClient (integration/approval_test.go).
//
//   WRAPTOOL_TOKEN=... node elicit.mjs --url http://127.0.0.1:PORT --answer once|hour|deny|decline|cancel|none --args JSON
//
// It connects over Streamable HTTP with $WRAPTOOL_TOKEN as the bearer token
// (so it never shows in a process listing), declaring the elicitation
// capability unless --answer is none, calls wraptool_request_capability
// with the JSON arguments, answers every elicitation/create as --answer
// says, and prints one JSON object:
//
//   {"asked":[{"message":"...","requestedSchema":{...}}],"isError":b,"text":"...","structuredContent":{...}}
//
// Any failure prints {"event":"error",...} and exits 1.
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    answer: { type: 'string' },
    args: { type: 'string' },
  },
});
if (!opts.url || !opts.answer || !opts.args) {
  process.stderr.write('usage: node elicit.mjs --url BASE_URL --answer once|hour|deny|decline|cancel|none --args JSON\n');
  process.exit(2);
}

function fail(where, err) {
  process.stdout.write(JSON.stringify({ event: 'error', where, message: String(err?.stack ?? err) }) + '\n');
  process.exit(1);
}
// A whole-run guard: the server's own bound on an unanswered question is
// 120 s, far beyond what this client takes to answer.
setTimeout(() => fail('deadline', new Error('elicit.mjs still running after 60 s')), 60000).unref();

const token = process.env.WRAPTOOL_TOKEN ?? '';
const headers = token ? { Authorization: `Bearer ${token}` } : {};
const capabilities = opts.answer === 'none' ? {} : { elicitation: { form: {} } };
const client = new Client({ name: 'wraptool-node-elicit', version: '1.0.0' }, { capabilities });
const asked = [];
if (opts.answer !== 'none') {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push({ message: req.params.message, requestedSchema: req.params.requestedSchema });
    switch (opts.answer) {
      case 'decline':
      case 'cancel':
        return { action: opts.answer };
      default:
        return { action: 'accept', content: { decision: opts.answer } };
    }
  });
}
try {
  const transport = new StreamableHTTPClientTransport(new URL(opts.url.replace(/\/+$/, '') + '/mcp'), { requestInit: { headers } });
  await client.connect(transport);
  const res = await client.callTool({ name: 'wraptool_request_capability', arguments: JSON.parse(opts.args) }, undefined, { timeout: 50000 });
  process.stdout.write(JSON.stringify({
    asked,
    isError: res.isError ?? false,
    text: res.content?.find((c) => c.type === 'text')?.text ?? '',
    structuredContent: res.structuredContent ?? null,
  }) + '\n');
  await client.close();
  process.exit(0);
} catch (err) {
  fail('call', err);
}
