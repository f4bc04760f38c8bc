"""GetTask, ListTasks, SubscribeToTask / tasks/resubscribe, CancelTask."""

import asyncio
import re

import pytest

from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SubscribeToTaskRequest,
    TaskNotCancelableError,
)

from interop import (
    MODES_1_0,
    S,
    collect,
    consolidate_text,
    kinds,
    make_client,
    new_text,
    send,
    state_name,
    text_of,
    user_message,
    wait_for_state,
)
from test_errors import assert_error


async def test_get_task_with_history_length(http, mode):
    client = await make_client(http, 'echo', mode)
    text = new_text()
    created = await send(client, user_message(text))

    full = await client.get_task(GetTaskRequest(id=created.id))
    assert full.id == created.id
    assert full.context_id == created.context_id
    assert state_name(full.status.state) == 'TASK_STATE_COMPLETED'
    assert [(a.artifact_id, a.parts[0].text) for a in full.artifacts] == [('echo', text)]
    user_msgs = [m for m in full.history if m.role == Role.ROLE_USER]
    assert [text_of(m.parts) for m in user_msgs] == [text]
    assert len(full.history) >= 1

    one = await client.get_task(GetTaskRequest(id=created.id, history_length=1))
    assert one.id == created.id
    assert len(one.history) == 1
    # the newest message is kept
    assert one.history[0].message_id == full.history[-1].message_id


@pytest.mark.parametrize('mode', MODES_1_0)
async def test_list_tasks_by_context_with_paging(http, mode):
    client = await make_client(http, 'echo', mode)
    first = await send(client, user_message(new_text()))
    ctx = first.context_id
    second = await send(client, user_message(new_text(), context_id=ctx))
    third = await send(client, user_message(new_text(), context_id=ctx))
    assert second.context_id == ctx and third.context_id == ctx
    created = [first.id, second.id, third.id]
    assert len(set(created)) == 3

    listed = await client.list_tasks(ListTasksRequest(context_id=ctx))
    assert listed.total_size == 3
    assert listed.next_page_token == ''
    assert [t.id for t in listed.tasks] == list(reversed(created)), 'newest first'
    for t in listed.tasks:
        assert t.context_id == ctx
        assert state_name(t.status.state) == 'TASK_STATE_COMPLETED'

    seen, token, pages = [], '', 0
    while True:
        page = await client.list_tasks(ListTasksRequest(context_id=ctx, page_size=1, page_token=token))
        pages += 1
        assert len(page.tasks) == 1
        assert page.page_size == 1
        assert page.total_size == 3
        seen.append(page.tasks[0].id)
        token = page.next_page_token
        if not token:
            break
        assert pages < 5, 'paging does not terminate'
    assert pages == 3
    assert seen == list(reversed(created))


@pytest.mark.timeout(40)
async def test_subscribe_to_running_task(http, mode):
    client = await make_client(http, 'consolidate', mode)
    streamer = await make_client(http, 'consolidate', mode, streaming=True)
    n = 10
    task = await send(client, user_message(consolidate_text(n)), return_immediately=True)
    assert task.status.state in (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING)

    events = await collect(streamer.subscribe(SubscribeToTaskRequest(id=task.id)), timeout=25)

    k = kinds(events)
    assert k[0] == 'task', k
    snapshot = events[0].task
    assert snapshot.id == task.id
    assert snapshot.context_id == task.context_id
    assert snapshot.status.state in (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING)
    progress = []
    for e in events[1:]:
        ev = getattr(e, e.WhichOneof('payload'))
        assert ev.task_id == task.id
        if e.HasField('status_update'):
            m = re.fullmatch(r'transcript (\d+)/(\d+)', text_of(e.status_update.status.message.parts))
            if m:
                progress.append(int(m.group(1)))
                assert int(m.group(2)) == n
    assert progress, 'no live progress events'
    assert progress == sorted(progress) and len(set(progress)) == len(progress)
    assert progress[-1] == n
    assert len(progress) >= 3, f'subscribed late? only saw {progress}'
    assert k[-1] == 'status_update'
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'
    arts = [e.artifact_update.artifact.name for e in events if e.HasField('artifact_update')]
    assert arts and set(arts) == {'facts'}


@pytest.mark.timeout(40)
async def test_cancel_running_task(http, mode):
    client = await make_client(http, 'consolidate', mode)
    task = await send(client, user_message(consolidate_text(20)), return_immediately=True)
    await wait_for_state(client, task.id, {S.TASK_STATE_WORKING}, timeout=5)
    await asyncio.sleep(0.3)

    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.id == task.id
    assert state_name(canceled.status.state) == 'TASK_STATE_CANCELED'

    await asyncio.sleep(0.6)  # a canceled task stays canceled: no late progress
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert state_name(got.status.state) == 'TASK_STATE_CANCELED'
    assert not [a for a in got.artifacts if a.name == 'facts']

    # Cancelling again: either the (still canceled) task or TaskNotCancelable.
    try:
        again = await client.cancel_task(CancelTaskRequest(id=task.id))
    except Exception as e:  # noqa: BLE001
        assert_error(e, mode, TaskNotCancelableError, -32002, 400)
    else:
        assert again.id == task.id
        assert state_name(again.status.state) == 'TASK_STATE_CANCELED'


async def test_cancel_completed_task_is_not_cancelable(http, mode):
    client = await make_client(http, 'echo', mode)
    done = await send(client, user_message(new_text()))
    assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'
    with pytest.raises(Exception) as ei:
        await client.cancel_task(CancelTaskRequest(id=done.id))
    assert_error(ei.value, mode, TaskNotCancelableError, -32002, 400)
    got = await client.get_task(GetTaskRequest(id=done.id))
    assert state_name(got.status.state) == 'TASK_STATE_COMPLETED'
