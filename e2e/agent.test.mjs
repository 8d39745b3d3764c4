// End-to-end test of `pgbus serve` with the official MCP TypeScript SDK, as
// an agent integration would use it: the SDK starts the built binary over
// stdio, lists the tools, checks their annotations, calls every read tool
// and pgbus_dlq_retry. Client.callTool validates each tool's structured
// content against the tool's outputSchema; the first test proves that the
// installed SDK really does, so a silent skip fails the run.
//
// Run by e2e_test.go (go test ./e2e), which builds the binary and prepares
// the database, with:
//   PGBUS_BINARY             path of the pgbus binary
//   PGBUS_E2E_DATABASE_URL   database holding the dead messages below
//   PGBUS_E2E_QUEUE          queue whose DLQ holds them
//   PGBUS_E2E_IDS            their ids in the DLQ, comma-separated (3 of them)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

function required(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through go test ./e2e`);
  return v;
}

const binary = required('PGBUS_BINARY');
const databaseURL = required('PGBUS_E2E_DATABASE_URL');
const queue = required('PGBUS_E2E_QUEUE');
const ids = required('PGBUS_E2E_IDS').split(',').map(Number);

const WRITE_TOOLS = ['pgbus_dlq_retry', 'pgbus_dlq_discard', 'pgbus_dlq_restore', 'pgbus_dlq_purge', 'pgbus_queue_pause', 'pgbus_queue_resume'];
const READ_TOOLS = ['pgbus_health', 'pgbus_queue_stats', 'pgbus_dlq_summary', 'pgbus_dlq_list', 'pgbus_dlq_show', 'pgbus_dlq_discarded', 'pgbus_queue_messages', 'pgbus_workers', 'pgbus_audit'];
const DESTRUCTIVE = ['pgbus_dlq_discard', 'pgbus_dlq_purge'];

// Arguments for the read tools that need some; the others get {}.
const readArgs = {
  pgbus_queue_stats: { queue },
  pgbus_dlq_summary: { queue },
  pgbus_dlq_list: { queue, limit: 2 },
  pgbus_dlq_show: { queue, msg_id: ids[0], include_payload: true },
  pgbus_dlq_discarded: { queue },
  pgbus_queue_messages: { queue },
};

let client;
let transport;
let tools;
let stderr = '';
// When set, the next tools/call result's structured content is replaced by
// this function's result before the SDK sees it.
let tamper = null;

before(async () => {
  transport = new StdioClientTransport({
    command: binary,
    args: ['serve', '--database-url', databaseURL, '--allow-payloads', '--log-format', 'json'],
    env: { ...getDefaultEnvironment(), DATABASE_URL: '' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => { stderr += chunk; });
  client = new Client({ name: 'pgbus-e2e', version: '1.0.0' });
  await client.connect(transport);
  const inner = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (tamper && message?.result?.structuredContent) {
      message.result.structuredContent = tamper(message.result.structuredContent);
      tamper = null;
    }
    inner(message, extra);
  };
  ({ tools } = await client.listTools());
});

after(async () => {
  await client?.close();
});

async function call(name, args) {
  return client.callTool({ name, arguments: args });
}

function checkResult(name, result) {
  assert.ok(!result.isError, `${name} answered a tool error: ${JSON.stringify(result.content)}`);
  assert.equal(typeof result.structuredContent, 'object', `${name}: no structured content`);
  const text = result.content.find((c) => c.type === 'text');
  assert.ok(text, `${name}: no text content`);
  assert.deepEqual(JSON.parse(text.text), result.structuredContent, `${name}: the text copy differs from the structured content`);
}

test('the installed SDK validates structured content against outputSchema', async () => {
  const pkg = JSON.parse(readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url)));
  const pinned = JSON.parse(readFileSync(new URL('./package.json', import.meta.url))).devDependencies['@modelcontextprotocol/sdk'];
  assert.equal(pkg.version, pinned, 'the installed SDK is not the pinned version: run npm ci');
  for (const tool of tools) {
    assert.ok(tool.outputSchema, `${tool.name} has no outputSchema`);
  }
  // Give the SDK a result that breaks pgbus_health's output schema: if it
  // validates, callTool rejects it.
  tamper = (sc) => ({ ...sc, status: 42, queues: 'many' });
  await assert.rejects(call('pgbus_health', {}), /output schema|structured content/i,
    'Client.callTool accepted structured content that does not match the outputSchema: the SDK did not validate');
  // The untouched result passes the same validation.
  checkResult('pgbus_health', await call('pgbus_health', {}));
});

test('tools are listed with schemas and explicit annotations', () => {
  const names = tools.map((t) => t.name);
  for (const want of ['pgbus_health', 'pgbus_queue_stats', 'pgbus_dlq_summary', 'pgbus_dlq_list', 'pgbus_dlq_show', 'pgbus_dlq_retry']) {
    assert.ok(names.includes(want), `${want} is not listed (${names})`);
  }
  for (const tool of tools) {
    assert.ok(tool.name.startsWith('pgbus_'), tool.name);
    assert.ok(tool.description && tool.description.length > 40, `${tool.name}: no real description`);
    assert.equal(tool.inputSchema.type, 'object', `${tool.name}: input schema is not an object`);
    assert.equal(tool.outputSchema.type, 'object', `${tool.name}: output schema is not an object`);
    const a = tool.annotations;
    assert.ok(a, `${tool.name} has no annotations`);
    for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
      assert.equal(typeof a[hint], 'boolean', `${tool.name}: ${hint} is not set explicitly`);
    }
    assert.equal(a.openWorldHint, false, `${tool.name}: pgbus only talks to its own database`);
    if (WRITE_TOOLS.includes(tool.name)) assert.equal(a.readOnlyHint, false, `${tool.name}: readOnlyHint`);
    if (READ_TOOLS.includes(tool.name)) assert.equal(a.readOnlyHint, true, `${tool.name}: readOnlyHint`);
    if (a.readOnlyHint) {
      assert.equal(a.destructiveHint, false, `${tool.name}: a read tool is not destructive`);
      assert.equal(a.idempotentHint, true, `${tool.name}: a read tool is idempotent`);
    }
    if (DESTRUCTIVE.includes(tool.name)) assert.equal(a.destructiveHint, true, `${tool.name}: destructiveHint`);
  }
  assert.equal(tools.find((t) => t.name === 'pgbus_dlq_retry').annotations.destructiveHint, false);
});

test('every read tool answers content that matches its output schema', async () => {
  const readTools = tools.filter((t) => t.annotations.readOnlyHint);
  assert.ok(readTools.length >= 5, `only ${readTools.length} read tools`);
  for (const tool of readTools) {
    const result = await call(tool.name, readArgs[tool.name] ?? {});
    checkResult(tool.name, result);
  }
  const summary = (await call('pgbus_dlq_summary', { queue })).structuredContent;
  assert.equal(summary.total, ids.length);
  const show = (await call('pgbus_dlq_show', { queue, msg_id: ids[0], include_payload: true })).structuredContent;
  assert.equal(show.msg_id, ids[0]);
  assert.equal(show.dead_letter.error_class, 'CardDeclined');
  assert.ok(show.payload_shown);
  assert.ok(!JSON.stringify(show).includes('hunter2'), 'a secret in the payload was not redacted');
  const page = (await call('pgbus_dlq_list', { queue, limit: 2 })).structuredContent;
  assert.equal(page.items.length, 2);
  assert.ok(page.next_cursor, 'no next_cursor on a full page');
  const rest = (await call('pgbus_dlq_list', { queue, limit: 2, cursor: page.next_cursor })).structuredContent;
  assert.equal(rest.items.length, 1);
});

test('pgbus_dlq_retry moves a dead message back, once, and is audited', async () => {
  const id = ids[1];
  const dry = await call('pgbus_dlq_retry', { queue, ids: [id], dry_run: true });
  checkResult('pgbus_dlq_retry', dry);
  assert.equal(dry.structuredContent.dry_run, true);

  const result = await call('pgbus_dlq_retry', { queue, ids: [id] });
  checkResult('pgbus_dlq_retry', result);
  assert.equal(result.structuredContent.retried, 1);
  assert.equal(result.structuredContent.failed, 0);
  assert.equal(result.structuredContent.moved[0].queue, queue);

  const listed = (await call('pgbus_dlq_list', { queue })).structuredContent.items.map((i) => i.msg_id);
  assert.ok(!listed.includes(id), `message ${id} is still in the DLQ`);
  const live = (await call('pgbus_queue_messages', { queue })).structuredContent;
  assert.equal(live.items.length, 1, 'the retried message is not back on its queue');

  const again = await call('pgbus_dlq_retry', { queue, ids: [id] });
  const twice = again.isError || again.structuredContent?.retried === 0;
  assert.ok(twice, `retrying message ${id} a second time moved it again: ${JSON.stringify(again)}`);

  const audit = await call('pgbus_audit', { tool: 'pgbus_dlq_retry' });
  checkResult('pgbus_audit', audit);
  const text = JSON.stringify(audit.structuredContent);
  assert.ok(text.includes('pgbus-e2e'), `the audit log does not name the client: ${text}`);
});

test('resources, templates and the prompt', async () => {
  const { resources } = await client.listResources();
  assert.ok(resources.some((r) => r.uri === 'pgbus://queues'));
  const { resourceTemplates } = await client.listResourceTemplates();
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  assert.ok(templates.includes('pgbus://queues/{queue}/stats'), templates);
  assert.ok(templates.includes('pgbus://dlq/{queue}/{msg_id}'), templates);
  const stats = await client.readResource({ uri: `pgbus://queues/${queue}/stats` });
  assert.equal(JSON.parse(stats.contents[0].text).queue, queue);
  const dead = await client.readResource({ uri: `pgbus://dlq/${queue}/${ids[0]}` });
  assert.equal(JSON.parse(dead.contents[0].text).msg_id, ids[0]);
  await assert.rejects(client.readResource({ uri: `pgbus://dlq/${queue}/not-an-id` }), /positive integer/);
  const prompt = await client.getPrompt({ name: 'investigate_dead_letters', arguments: { queue } });
  assert.match(prompt.messages[0].content.text, /pgbus_dlq_summary/);
  assert.match(prompt.messages[0].content.text, new RegExp(queue));
});

test('stdout carried only protocol; logs went to stderr', () => {
  // Any stray line on stdout would have broken the SDK's JSON-RPC parsing
  // above; the server's logs are on stderr.
  assert.match(stderr, /pgbus MCP server on stdio/);
});
