// A2A errors as surfaced by the official JS client.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';

import { MODES, assertA2AError, makeClient, newText, rejects, send, stateName, userMessage } from './lib.mjs';

for (const mode of MODES) {
  describe(`errors [${mode}]`, () => {
    test('GetTask of an unknown id is TaskNotFound', { timeout: 15000 }, async () => {
      const { client } = await makeClient('echo', mode);
      const err = await rejects(client.getTask({ tenant: '', id: `no-such-task-${randomUUID()}` }));
      assertA2AError(err, mode, { cls: TaskNotFoundError, code: -32001, httpStatus: 404 });
    });

    test('a message to a completed task is UnsupportedOperation', { timeout: 15000 }, async () => {
      const { client } = await makeClient('echo', mode);
      const done = await send(client, userMessage(newText()));
      assert.equal(stateName(done.status.state), 'TASK_STATE_COMPLETED');
      const err = await rejects(send(client, userMessage('again', { taskId: done.id, contextId: done.contextId })));
      assertA2AError(err, mode, { cls: UnsupportedOperationError, code: -32004, httpStatus: 400 });
    });
  });
}
