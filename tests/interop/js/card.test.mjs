// Agent card discovery, as the official JS client sees it.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SWITCHBOARD_URL, agentBase, fetchCard, recordingFetch } from './lib.mjs';

const majorMinor = (v) => v.split('.').slice(0, 2).join('.');

for (const agent of ['echo', 'consolidate']) {
  test(`card of ${agent} lists JSON-RPC and HTTP+JSON for 1.0 and 0.3`, { timeout: 15000 }, async () => {
    const base = agentBase(agent);
    const card = await fetchCard(base);
    assert.equal(card.name, agent);
    assert.equal(card.capabilities.streaming, true);
    assert.equal(card.capabilities.pushNotifications, true);
    const ifaces = card.supportedInterfaces.map((i) => `${i.protocolBinding} ${majorMinor(i.protocolVersion)} ${i.url}`);
    assert.ok(ifaces.includes(`JSONRPC 1.0 ${base}a2a`), ifaces.join('\n'));
    assert.ok(ifaces.includes(`HTTP+JSON 1.0 ${base.replace(/\/$/, '')}`), ifaces.join('\n'));
    assert.ok(ifaces.includes(`JSONRPC 0.3 ${base}a2a`), ifaces.join('\n'));
    // Both SDKs append /v1/... themselves, so the 0.3 REST url is the bare base.
    assert.ok(ifaces.includes(`HTTP+JSON 0.3 ${base.replace(/\/$/, '')}`), ifaces.join('\n'));
  });
}

// The root card describes echo; its interfaces may live at the root or under
// /agents/echo/ (messaging.test.mjs checks that they work).
test('root card is the echo agent', { timeout: 15000 }, async () => {
  const card = await fetchCard(`${SWITCHBOARD_URL}/`);
  assert.equal(card.name, 'echo');
  const pairs = new Set(card.supportedInterfaces.map((i) => `${i.protocolBinding} ${majorMinor(i.protocolVersion)}`));
  for (const p of ['JSONRPC 1.0', 'HTTP+JSON 1.0', 'JSONRPC 0.3', 'HTTP+JSON 0.3']) assert.ok(pairs.has(p), [...pairs].join());
  // gRPC targets are host:port (spec §5.3), the server's own address; the root's names no
  // tenant (it serves echo, the default agent).
  const grpc = card.supportedInterfaces.filter((i) => i.protocolBinding === 'GRPC');
  assert.deepEqual(grpc.map((i) => [i.url, i.tenant]), [[new URL(SWITCHBOARD_URL).host, undefined]]);
  for (const i of card.supportedInterfaces.filter((i) => i.protocolBinding !== 'GRPC')) {
    assert.ok(i.url.startsWith(SWITCHBOARD_URL), i.url);
  }
});

test('card is fetched with GET {base}.well-known/agent-card.json and A2A-Version 1.0', { timeout: 15000 }, async () => {
  const wire = recordingFetch();
  await fetchCard(agentBase('echo'), wire.fetchImpl);
  const req = wire.last();
  assert.equal(req.method, 'GET');
  assert.equal(req.url, `${agentBase('echo')}.well-known/agent-card.json`);
  assert.equal(req.headers['a2a-version'], '1.0');
});
