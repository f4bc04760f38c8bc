// SendMessage (blocking, non-blocking) and SendStreamingMessage.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import {
  MODES,
  Role,
  SWITCHBOARD_URL,
  TaskState,
  agentBase,
  consolidateText,
  kinds,
  makeClient,
  newText,
  send,
  splitMode,
  stateName,
  streamSend,
  textOf,
  userMessage,
  waitForState,
} from './lib.mjs';

/** The client spoke the expected dialect at the expected URL. */
function assertWire(wire, mode, agent, { rpc10, rpc03, restPath }) {
  const { binding, version } = splitMode(mode);
  const base = agentBase(agent);
  let req;
  if (binding === 'JSONRPC') {
    req = wire.last((r) => r.url === `${base}a2a`);
    assert.equal(req.method, 'POST');
    assert.equal(req.body.jsonrpc, '2.0');
    assert.equal(req.body.method, version === '1.0' ? rpc10 : rpc03);
  } else {
    const prefix = base.replace(/\/$/, '') + (version === '0.3' ? '/v1' : '');
    req = wire.last((r) => r.url.startsWith(prefix + restPath));
    assert.equal(req.method, 'POST');
  }
  assert.equal(req.headers['a2a-version'], version);
  return req;
}

for (const mode of MODES) {
  describe(`messaging [${mode}]`, () => {
    test('blocking send to echo returns the completed task', { timeout: 20000 }, async () => {
      const { client, wire } = await makeClient('echo', mode);
      const text = newText();
      const task = await send(client, userMessage(text));

      const req = assertWire(wire, mode, 'echo', { rpc10: 'SendMessage', rpc03: 'message/send', restPath: '/message:send' });
      if (mode === 'jsonrpc-0.3') assert.equal(req.body.params.configuration.blocking, true);
      assert.ok(task.id);
      assert.ok(task.contextId);
      assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
      assert.equal(task.status.message.role, Role.ROLE_AGENT);
      assert.equal(textOf(task.status.message.parts), text);
      assert.deepEqual(
        task.artifacts.map((a) => [a.artifactId, a.name, a.parts.length, textOf(a.parts)]),
        [['echo', 'echo', 1, text]],
      );
    });

    test('non-blocking send returns submitted/working, then GetTask polls to completed', { timeout: 25000 }, async () => {
      const { client, wire } = await makeClient('consolidate', mode);
      const task = await send(client, userMessage(consolidateText(3)), { returnImmediately: true });

      const { binding, version } = splitMode(mode);
      if (binding === 'JSONRPC') {
        const cfg = wire.last((r) => r.body?.method === (version === '1.0' ? 'SendMessage' : 'message/send')).body.params.configuration;
        if (version === '1.0') assert.equal(cfg.returnImmediately, true);
        else assert.equal(cfg.blocking, false);
      } else if (version === '0.3') {
        // Over 0.3 REST both official clients send proto3 JSON and so OMIT
        // `blocking: false` (the default); `blocking: true` is sent explicitly.
        // A server must therefore read an absent `blocking` as non-blocking there.
        const body = wire.last((r) => r.url.endsWith('/v1/message:send')).body;
        assert.equal(body.configuration?.blocking, undefined);
      }
      assert.ok([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status.state), stateName(task.status.state));
      const done = await waitForState(client, task.id, [TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED]);
      assert.equal(stateName(done.status.state), 'TASK_STATE_COMPLETED');
      assert.equal(done.id, task.id);
      assert.equal(done.contextId, task.contextId);
      const facts = done.artifacts.filter((a) => a.name === 'facts');
      assert.equal(facts.length, 1);
      for (const k of [1, 2, 3]) assert.ok(textOf(facts[0].parts).includes(`colour number ${k}`));
    });

    test('streaming send to echo: Task first, then updates, completed last', { timeout: 20000 }, async () => {
      const { client, wire } = await makeClient('echo', mode);
      const text = newText();
      const events = await streamSend(client, userMessage(text));

      assertWire(wire, mode, 'echo', { rpc10: 'SendStreamingMessage', rpc03: 'message/stream', restPath: '/message:stream' });
      const k = kinds(events);
      assert.equal(k[0], 'task', k.join());
      assert.ok(k.slice(1).every((x) => x === 'statusUpdate' || x === 'artifactUpdate'), k.join());
      assert.equal(k.at(-1), 'statusUpdate', k.join());
      const task = events[0].payload.value;
      assert.ok([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status.state));
      for (const e of events.slice(1)) {
        assert.equal(e.payload.value.taskId, task.id);
        assert.equal(e.payload.value.contextId, task.contextId);
      }
      const states = events.filter((e) => e.payload.$case === 'statusUpdate').map((e) => stateName(e.payload.value.status.state));
      assert.equal(states[0], 'TASK_STATE_WORKING', states.join());
      assert.equal(states.at(-1), 'TASK_STATE_COMPLETED', states.join());
      assert.equal(states.filter((s) => s === 'TASK_STATE_COMPLETED').length, 1);
      const last = events.at(-1).payload.value.status;
      assert.equal(last.message.role, Role.ROLE_AGENT);
      assert.equal(textOf(last.message.parts), text);
      const arts = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value.artifact);
      assert.deepEqual(arts.map((a) => [a.artifactId, a.name, textOf(a.parts)]), [['echo', 'echo', text]]);
      const stored = await client.getTask({ tenant: '', id: task.id });
      assert.equal(stateName(stored.status.state), 'TASK_STATE_COMPLETED');
      assert.equal(textOf(stored.artifacts[0].parts), text);
    });

    test('streaming send to consolidate reports transcript k/N in order', { timeout: 30000 }, async () => {
      const { client } = await makeClient('consolidate', mode);
      const events = await streamSend(client, userMessage(consolidateText(4)));

      assert.equal(kinds(events)[0], 'task');
      const progress = [];
      for (const e of events) {
        if (e.payload.$case !== 'statusUpdate') continue;
        const m = /^transcript (\d+)\/(\d+)$/.exec(textOf(e.payload.value.status.message?.parts));
        if (m) {
          assert.equal(stateName(e.payload.value.status.state), 'TASK_STATE_WORKING');
          progress.push(`${m[1]}/${m[2]}`);
        }
      }
      assert.deepEqual(progress, ['1/4', '2/4', '3/4', '4/4']);
      assert.equal(events.at(-1).payload.$case, 'statusUpdate');
      assert.equal(stateName(events.at(-1).payload.value.status.state), 'TASK_STATE_COMPLETED');
      const updates = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value);
      assert.deepEqual([...new Set(updates.map((u) => u.artifact.name))], ['facts']);
      // Text arrives as deltas, then once more whole (append false, lastChunk true).
      const whole = updates.at(-1);
      assert.ok(!whole.append && whole.lastChunk);
      assert.ok(textOf(whole.artifact.parts).includes('colour number 4'));
      assert.ok(textOf(whole.artifact.parts).includes('colour number 1'));
    });
  });
}

for (const mode of MODES) {
  test(`echo is discoverable from the server root [${mode}]`, { timeout: 20000 }, async () => {
    const { client } = await makeClient('echo', mode, { baseUrl: `${SWITCHBOARD_URL}/` });
    const text = newText();
    const task = await send(client, userMessage(text));
    assert.equal(stateName(task.status.state), 'TASK_STATE_COMPLETED');
    assert.equal(textOf(task.artifacts[0].parts), text);
  });
}
