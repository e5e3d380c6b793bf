// appserver's MCP server (/mcp) driven by the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in package-lock.json), for the fixes outside clients found: descriptor apps' resource URIs
// are valid URLs, an unknown tool is JSON-RPC -32602, app_discover is offered and app_command
// takes timeoutMs, and ending a session (DELETE) succeeds. The server binary is $APPSERVER_BIN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const TIMEOUT = 20_000;

/** A server on a fresh workspace (`prepare(workspace)` runs first); its /mcp URL. */
async function startServer(t, prepare = () => {}) {
  const workspace = mkdtempSync(join(tmpdir(), 'appserver-mcp-ts-'));
  prepare(workspace);
  const binary = process.env.APPSERVER_BIN;
  assert.ok(binary, 'APPSERVER_BIN names the server binary');
  const child = spawn(binary, ['--workspace', workspace, '--listen', 'ws://127.0.0.1:0'], {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  const url = await new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no listening line:\n${seen}`)), TIMEOUT);
    child.stderr.on('data', (chunk) => {
      seen += chunk.toString();
      const match = seen.match(/appserver: listening on ws:\/\/(\S+?)(\/ws)?\s/);
      if (match) {
        clearTimeout(timer);
        resolve(`http://${match[1]}/mcp`);
      }
    });
    child.on('exit', () => reject(new Error(`the server exited:\n${seen}`)));
  });
  return { url, workspace };
}

async function connect(t, url) {
  const client = new Client({ name: 'ts-agent', version: '1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  t.after(() => client.close());
  return { client, transport };
}

test('a descriptor app resource is a valid URL the SDK reads', async (t) => {
  const { url } = await startServer(t, (workspace) => {
    const folder = join(workspace, '.appserver', 'apps', 'notes');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'aai.json'), JSON.stringify({
      schema_version: '1.0',
      app: { id: 'com.example.notes', name: 'Notes' },
      execution: { type: 'http', base_url: 'http://127.0.0.1:9' },
      tools: [{ name: 'echo', description: 'Echo' }],
    }));
  });
  const { client } = await connect(t, url);
  const deadline = Date.now() + TIMEOUT;
  let resources = [];
  while (resources.length === 0 && Date.now() < deadline) {
    resources = (await client.listResources()).resources;
    if (resources.length === 0) await new Promise((r) => setTimeout(r, 50));
  }
  assert.deepEqual(resources.map((r) => r.uri), ['app://aai%3Acom.example.notes']);
  assert.doesNotThrow(() => new URL(resources[0].uri));
  const read = await client.readResource({ uri: resources[0].uri });
  assert.equal(JSON.parse(read.contents[0].text).appId, 'com.example.notes');
});

test('an unknown tool is -32602, app_discover is listed, app_command takes timeoutMs, DELETE ends the session', async (t) => {
  const { url } = await startServer(t);
  const { client, transport } = await connect(t, url);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tool) => tool.name), ['app_list', 'app_query', 'app_command', 'app_discover']);
  assert.equal(tools[2].inputSchema.properties.timeoutMs.type, 'integer');
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), (err) => {
    assert.equal(err.code, -32602);
    return true;
  });
  const bad = await client.callTool({ name: 'app_command', arguments: { windowId: 'w' } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /^INVALID_PARAMS: /);
  await transport.terminateSession();
  assert.equal(transport.sessionId, undefined);
});
