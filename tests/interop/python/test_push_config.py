"""Push-notification config CRUD (1.0 flat shape, 0.3 nested shape on the wire)."""

import uuid

import pytest

from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskNotFoundError,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import A2AError

from test_errors import assert_error
from interop import (
    CONTRADICTION,
    MODES,
    agent_base,
    make_client,
    send,
    split_mode,
    state_name,
    user_message,
)

HOOK = 'http://127.0.0.1:9/hook'

# a2a-sdk's CompatRestTransport raises NotImplementedError for list and delete.
MODES_WITH_LIST_DELETE = [m for m in MODES if m != 'rest-0.3']


async def _waiting_task(client):
    """A task parked in input-required, so it stays non-terminal."""
    task = await send(client, user_message(CONTRADICTION))
    assert state_name(task.status.state) == 'TASK_STATE_INPUT_REQUIRED'
    return task


def _assert_create_wire(wire, mode, task_id, cfg_id, token):
    binding, version = split_mode(mode)
    base = agent_base('consolidate')
    if binding == 'GRPC':
        assert all(r['url'].endswith('/agent-card.json') for r in wire.requests), wire.requests
        return
    if binding == 'JSONRPC':
        body = wire.last(lambda r: r['url'] == base + 'a2a' and r['body'] and 'push' in r['body']['method'].lower())['body']
        if version == '1.0':
            assert body['method'] == 'CreateTaskPushNotificationConfig'
            assert body['params'] == {'taskId': task_id, 'id': cfg_id, 'url': HOOK, 'token': token}
        else:
            assert body['method'] == 'tasks/pushNotificationConfig/set'
            assert body['params'] == {
                'taskId': task_id,
                'pushNotificationConfig': {'id': cfg_id, 'url': HOOK, 'token': token},
            }
    else:
        prefix = base.rstrip('/') + ('/v1' if version == '0.3' else '')
        req = wire.last(lambda r: r['method'] == 'POST' and r['url'] == f'{prefix}/tasks/{task_id}/pushNotificationConfigs')
        body = req['body']
        if version == '1.0':
            assert body == {'taskId': task_id, 'id': cfg_id, 'url': HOOK, 'token': token}
        else:
            # 0.3 proto CreateTaskPushNotificationConfigRequest, snake_case names
            assert body['parent'] == f'tasks/{task_id}'
            assert body['config']['push_notification_config'] == {'id': cfg_id, 'url': HOOK, 'token': token}


def _assert_cfg(cfg, task_id, cfg_id, token):
    assert cfg.task_id == task_id
    assert cfg.id == cfg_id
    assert cfg.url == HOOK
    assert cfg.token == token


@pytest.mark.timeout(40)
async def test_push_config_create_and_get(http, wire, mode):
    client = await make_client(http, 'consolidate', mode)
    task = await _waiting_task(client)
    cfg_id, token = f'cfg-{uuid.uuid4().hex[:8]}', f'tok-{uuid.uuid4().hex}'
    try:
        created = await client.create_task_push_notification_config(
            TaskPushNotificationConfig(task_id=task.id, id=cfg_id, url=HOOK, token=token)
        )
        _assert_create_wire(wire, mode, task.id, cfg_id, token)
        _assert_cfg(created, task.id, cfg_id, token)

        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id=cfg_id)
        )
        _assert_cfg(got, task.id, cfg_id, token)
    finally:
        await client.cancel_task(CancelTaskRequest(id=task.id))


@pytest.mark.timeout(40)
@pytest.mark.parametrize('mode', MODES_WITH_LIST_DELETE)
async def test_push_config_list_and_delete(http, mode):
    client = await make_client(http, 'consolidate', mode)
    task = await _waiting_task(client)
    a, b = f'cfg-a-{uuid.uuid4().hex[:8]}', f'cfg-b-{uuid.uuid4().hex[:8]}'
    try:
        for cfg_id in (a, b):
            await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, id=cfg_id, url=HOOK, token='tok-' + cfg_id)
            )
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert sorted(c.id for c in listed.configs) == sorted([a, b])
        for c in listed.configs:
            _assert_cfg(c, task.id, c.id, 'tok-' + c.id)

        result = await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=a)
        )
        assert result is None

        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [c.id for c in listed.configs] == [b]
        # A2A has no dedicated "config not found" error; both SDK servers
        # answer TaskNotFound (-32001 / HTTP 404).
        with pytest.raises(A2AError) as ei:
            await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id=a)
            )
        assert_error(ei.value, mode, TaskNotFoundError, -32001, 404)
    finally:
        await client.cancel_task(CancelTaskRequest(id=task.id))
