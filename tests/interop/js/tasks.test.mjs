// GetTask, ListTasks, SubscribeToTask / tasks/resubscribe, CancelTask.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { TaskNotCancelableError } from '@a2a-js/sdk/errors';

import {
  MODES,
  Role,
  TaskState,
  assertA2AError,
  collect,
  consolidateText,
  kinds,
  makeClient,
  newText,
  rejects,
  send,
  sleep,
  stateName,
  textOf,
  userMessage,
  waitForState,
} from './lib.mjs';

const listReq = (over) => ({
  tenant: '',
  contextId: '',
  status: TaskState.TASK_STATE_UNSPECIFIED,
  pageToken: '',
  statusTimestampAfter: undefined,
  ...over,
});

for (const mode of MODES) {
  describe(`tasks [${mode}]`, () => {
    test('GetTask returns the task; historyLength=1 keeps only the newest message', { timeout: 20000 }, async () => {
      const { client } = await makeClient('echo', mode);
      const text = newText();
      const created = await send(client, userMessage(text));

      const full = await client.getTask({ tenant: '', id: created.id });
      assert.equal(full.id, created.id);
      assert.equal(full.contextId, created.contextId);
      assert.equal(stateName(full.status.state), 'TASK_STATE_COMPLETED');
      assert.deepEqual(full.artifacts.map((a) => [a.artifactId, textOf(a.parts)]), [['echo', text]]);
      const userTexts = full.history.filter((m) => m.role === Role.ROLE_USER).map((m) => textOf(m.parts));
      assert.deepEqual(userTexts, [text]);

      const one = await client.getTask({ tenant: '', id: created.id, historyLength: 1 });
      assert.equal(one.id, created.id);
      assert.equal(one.history.length, 1);
      assert.equal(one.history[0].messageId, full.history.at(-1).messageId);
    });

    if (mode.endsWith('1.0')) {
      test('ListTasks filters by contextId and pages with pageSize=1', { timeout: 20000 }, async () => {
        const { client } = await makeClient('echo', mode);
        const first = await send(client, userMessage(newText()));
        const ctx = first.contextId;
        const second = await send(client, userMessage(newText(), { contextId: ctx }));
        const third = await send(client, userMessage(newText(), { contextId: ctx }));
        assert.equal(second.contextId, ctx);
        assert.equal(third.contextId, ctx);
        const created = [first.id, second.id, third.id];
        assert.equal(new Set(created).size, 3);

        const listed = await client.listTasks(listReq({ contextId: ctx }));
        assert.equal(listed.totalSize, 3);
        assert.equal(listed.nextPageToken, '');
        assert.deepEqual(listed.tasks.map((t) => t.id), [...created].reverse(), 'newest first');
        for (const t of listed.tasks) {
          assert.equal(t.contextId, ctx);
          assert.equal(stateName(t.status.state), 'TASK_STATE_COMPLETED');
        }

        const seen = [];
        let token = '';
        let pages = 0;
        for (;;) {
          const page = await client.listTasks(listReq({ contextId: ctx, pageSize: 1, pageToken: token }));
          pages += 1;
          assert.equal(page.tasks.length, 1);
          assert.equal(page.pageSize, 1);
          assert.equal(page.totalSize, 3);
          seen.push(page.tasks[0].id);
          token = page.nextPageToken;
          if (!token) break;
          assert.ok(pages < 5, 'paging does not terminate');
        }
        assert.equal(pages, 3);
        assert.deepEqual(seen, [...created].reverse());
      });
    }

    test('subscribe to a running consolidate task: Task first, live progress, completed last', { timeout: 40000 }, async () => {
      const { client } = await makeClient('consolidate', mode);
      const n = 10;
      const task = await send(client, userMessage(consolidateText(n)), { returnImmediately: true });
      assert.ok([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status.state));

      const events = await collect(client.resubscribeTask({ tenant: '', id: task.id }), 25000);
      const k = kinds(events);
      assert.equal(k[0], 'task', k.join());
      const snap = events[0].payload.value;
      assert.equal(snap.id, task.id);
      assert.equal(snap.contextId, task.contextId);
      assert.ok([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(snap.status.state));
      const progress = [];
      for (const e of events.slice(1)) {
        assert.equal(e.payload.value.taskId, task.id);
        if (e.payload.$case !== 'statusUpdate') continue;
        const m = /^transcript (\d+)\/(\d+)$/.exec(textOf(e.payload.value.status.message?.parts));
        if (m) {
          progress.push(Number(m[1]));
          assert.equal(Number(m[2]), n);
        }
      }
      assert.ok(progress.length >= 3, `subscribed late? only saw ${progress}`);
      assert.deepEqual(progress, [...progress].sort((a, b) => a - b));
      assert.equal(new Set(progress).size, progress.length);
      assert.equal(progress.at(-1), n);
      assert.equal(k.at(-1), 'statusUpdate');
      assert.equal(stateName(events.at(-1).payload.value.status.state), 'TASK_STATE_COMPLETED');
      const arts = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value.artifact.name);
      assert.deepEqual([...new Set(arts)], ['facts']);
    });

    test('cancel a running consolidate task', { timeout: 40000 }, async () => {
      const { client } = await makeClient('consolidate', mode);
      const task = await send(client, userMessage(consolidateText(20)), { returnImmediately: true });
      await waitForState(client, task.id, [TaskState.TASK_STATE_WORKING], 5000);
      await sleep(300);

      const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      assert.equal(canceled.id, task.id);
      assert.equal(stateName(canceled.status.state), 'TASK_STATE_CANCELED');

      await sleep(600);
      const got = await client.getTask({ tenant: '', id: task.id });
      assert.equal(stateName(got.status.state), 'TASK_STATE_CANCELED');
      assert.equal(got.artifacts.filter((a) => a.name === 'facts').length, 0);

      // Cancelling again: either the (still canceled) task or TaskNotCancelable.
      let again;
      try {
        again = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
      } catch (e) {
        assertA2AError(e, mode, { cls: TaskNotCancelableError, code: -32002, httpStatus: 400 });
      }
      if (again) {
        assert.equal(again.id, task.id);
        assert.equal(stateName(again.status.state), 'TASK_STATE_CANCELED');
      }
    });

    test('cancel of a completed task is TaskNotCancelable', { timeout: 20000 }, async () => {
      const { client } = await makeClient('echo', mode);
      const done = await send(client, userMessage(newText()));
      assert.equal(stateName(done.status.state), 'TASK_STATE_COMPLETED');
      const err = await rejects(client.cancelTask({ tenant: '', id: done.id, metadata: undefined }));
      assertA2AError(err, mode, { cls: TaskNotCancelableError, code: -32002, httpStatus: 400 });
      const got = await client.getTask({ tenant: '', id: done.id });
      assert.equal(stateName(got.status.state), 'TASK_STATE_COMPLETED');
    });
  });
}
