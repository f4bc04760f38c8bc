// Push-notification config CRUD (1.0 flat shape, 0.3 nested shape on the wire).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { TaskNotFoundError } from '@a2a-js/sdk/errors';

import {
  CONTRADICTION,
  HOOK,
  MODES,
  agentBase,
  assertA2AError,
  makeClient,
  rejects,
  send,
  splitMode,
  stateName,
  userMessage,
} from './lib.mjs';

const cfg = (taskId, id, token) => ({ tenant: '', taskId, id, url: HOOK, token, authentication: undefined });

/** A task parked in input-required, so it stays non-terminal. */
async function waitingTask(client) {
  const task = await send(client, userMessage(CONTRADICTION));
  assert.equal(stateName(task.status.state), 'TASK_STATE_INPUT_REQUIRED');
  return task;
}

function assertCreateWire(wire, mode, taskId, id, token) {
  const { binding, version } = splitMode(mode);
  const base = agentBase('consolidate');
  if (binding === 'JSONRPC') {
    const body = wire.last((r) => r.url === `${base}a2a` && /push/i.test(r.body?.method ?? '')).body;
    if (version === '1.0') {
      assert.equal(body.method, 'CreateTaskPushNotificationConfig');
      assert.deepEqual(body.params, { taskId, id, url: HOOK, token });
    } else {
      assert.equal(body.method, 'tasks/pushNotificationConfig/set');
      assert.deepEqual(body.params, { taskId, pushNotificationConfig: { id, url: HOOK, token } });
    }
  } else {
    const prefix = base.replace(/\/$/, '') + (version === '0.3' ? '/v1' : '');
    const req = wire.last((r) => r.method === 'POST' && r.url === `${prefix}/tasks/${taskId}/pushNotificationConfigs`);
    if (version === '1.0') {
      assert.deepEqual(req.body, { taskId, id, url: HOOK, token });
    } else {
      // 0.3 proto TaskPushNotificationConfig: resource name + nested config
      assert.equal(req.body.name, `tasks/${taskId}/pushNotificationConfigs/${id}`);
      assert.deepEqual(req.body.pushNotificationConfig, { id, url: HOOK, token });
    }
  }
}

function assertCfg(c, taskId, id, token) {
  assert.equal(c.taskId, taskId);
  assert.equal(c.id, id);
  assert.equal(c.url, HOOK);
  assert.equal(c.token, token);
}

for (const mode of MODES) {
  describe(`push config [${mode}]`, () => {
    test('create (set) and get', { timeout: 40000 }, async () => {
      const { client, wire } = await makeClient('consolidate', mode);
      const task = await waitingTask(client);
      const id = `cfg-${randomUUID().slice(0, 8)}`;
      const token = `tok-${randomUUID()}`;
      try {
        const created = await client.createTaskPushNotificationConfig(cfg(task.id, id, token));
        assertCreateWire(wire, mode, task.id, id, token);
        assertCfg(created, task.id, id, token);
        const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id });
        assertCfg(got, task.id, id, token);
      } finally {
        await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      }
    });

    test('list and delete', { timeout: 40000 }, async () => {
      const { client } = await makeClient('consolidate', mode);
      const task = await waitingTask(client);
      const a = `cfg-a-${randomUUID().slice(0, 8)}`;
      const b = `cfg-b-${randomUUID().slice(0, 8)}`;
      try {
        for (const id of [a, b]) await client.createTaskPushNotificationConfig(cfg(task.id, id, `tok-${id}`));
        let listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
        assert.deepEqual(listed.configs.map((c) => c.id).sort(), [a, b].sort());
        for (const c of listed.configs) assertCfg(c, task.id, c.id, `tok-${c.id}`);

        const result = await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: a });
        assert.equal(result, undefined);

        listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
        assert.deepEqual(listed.configs.map((c) => c.id), [b]);
        // A2A has no dedicated "config not found" error; both SDK servers
        // answer TaskNotFound (-32001 / HTTP 404).
        const err = await rejects(client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: a }));
        assertA2AError(err, mode, { cls: TaskNotFoundError, code: -32001, httpStatus: 404 });
      } finally {
        await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      }
    });
  });
}
