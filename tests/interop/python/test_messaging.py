"""SendMessage (blocking, non-blocking) and SendStreamingMessage."""

import re

import pytest

from a2a.types import GetTaskRequest, Role

from interop import (
    S,
    SWITCHBOARD_URL,
    agent_base,
    consolidate_text,
    kinds,
    make_client,
    new_text,
    send,
    split_mode,
    state_name,
    stream_send,
    text_of,
    user_message,
    wait_for_state,
)


def assert_wire(wire, mode, agent, jsonrpc_method_10, jsonrpc_method_03, rest_path):
    """The client spoke the expected dialect at the expected URL."""
    binding, version = split_mode(mode)
    base = agent_base(agent)
    if binding == 'GRPC':
        # gRPC calls bypass httpx: only card fetches may appear there.
        assert all(r['url'].endswith('/agent-card.json') for r in wire.requests), wire.requests
        return
    if binding == 'JSONRPC':
        req = wire.last(lambda r: r['url'] == base + 'a2a')
        assert req['method'] == 'POST'
        expected = jsonrpc_method_10 if version == '1.0' else jsonrpc_method_03
        assert req['body']['method'] == expected
        assert req['body']['jsonrpc'] == '2.0'
    else:
        prefix = base.rstrip('/') + ('/v1' if version == '0.3' else '')
        req = wire.last(lambda r: r['url'].startswith(prefix + rest_path))
    assert req['headers'].get('a2a-version') == version


async def test_send_blocking_echo(http, wire, mode):
    client = await make_client(http, 'echo', mode)
    text = new_text()
    task = await send(client, user_message(text))

    assert_wire(wire, mode, 'echo', 'SendMessage', 'message/send', '/message:send')
    assert task.id
    assert task.context_id
    assert state_name(task.status.state) == 'TASK_STATE_COMPLETED'
    assert task.status.message.role == Role.ROLE_AGENT
    assert text_of(task.status.message.parts) == text
    assert len(task.artifacts) == 1
    art = task.artifacts[0]
    assert art.artifact_id == 'echo'
    assert art.name == 'echo'
    assert len(art.parts) == 1
    assert art.parts[0].text == text


async def test_send_non_blocking_then_poll(http, wire, mode):
    client = await make_client(http, 'consolidate', mode)
    task = await send(client, user_message(consolidate_text(3)), return_immediately=True)

    binding, version = split_mode(mode)
    if binding == 'JSONRPC':
        cfg = wire.last(lambda r: r['url'].endswith('/a2a'))['body']['params']['configuration']
        if version == '1.0':
            assert cfg['returnImmediately'] is True
        else:
            assert cfg['blocking'] is False
    elif version == '0.3':
        # Over 0.3 REST both official clients send proto3 JSON and so OMIT
        # `blocking: false` (the default); `blocking: true` is sent explicitly.
        # A server must therefore read an absent `blocking` as non-blocking there.
        body = wire.last(lambda r: r['url'].endswith('/v1/message:send'))['body']
        assert 'blocking' not in body.get('configuration', {})

    assert task.id
    assert task.status.state in (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING), state_name(task.status.state)
    done = await wait_for_state(client, task.id, {S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED}, timeout=15)
    assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'
    assert done.id == task.id
    assert done.context_id == task.context_id
    facts = [a for a in done.artifacts if a.name == 'facts']
    assert len(facts) == 1
    body = text_of(facts[0].parts)
    for k in (1, 2, 3):
        assert f'colour number {k}' in body


async def test_send_via_root_card(http, mode):
    """`echo` is discoverable from the server root."""
    client = await make_client(http, 'echo', mode, base_url=SWITCHBOARD_URL + '/')
    text = new_text()
    task = await send(client, user_message(text))
    assert state_name(task.status.state) == 'TASK_STATE_COMPLETED'
    assert task.artifacts[0].parts[0].text == text


async def test_streaming_echo(http, wire, mode):
    client = await make_client(http, 'echo', mode, streaming=True)
    text = new_text()
    events = await stream_send(client, user_message(text))

    assert_wire(wire, mode, 'echo', 'SendStreamingMessage', 'message/stream', '/message:stream')
    k = kinds(events)
    assert k[0] == 'task', k
    assert set(k[1:]) <= {'status_update', 'artifact_update'}, k
    assert k[-1] == 'status_update', k
    task = events[0].task
    assert task.status.state in (S.TASK_STATE_SUBMITTED, S.TASK_STATE_WORKING)
    for e in events[1:]:
        ev = getattr(e, e.WhichOneof('payload'))
        assert ev.task_id == task.id
        assert ev.context_id == task.context_id
    states = [state_name(e.status_update.status.state) for e in events if e.HasField('status_update')]
    assert states[0] == 'TASK_STATE_WORKING', states
    assert states[-1] == 'TASK_STATE_COMPLETED', states
    assert states.count('TASK_STATE_COMPLETED') == 1
    last = events[-1].status_update
    assert last.status.message.role == Role.ROLE_AGENT
    assert text_of(last.status.message.parts) == text
    arts = [e.artifact_update.artifact for e in events if e.HasField('artifact_update')]
    assert [(a.artifact_id, a.name, text_of(a.parts)) for a in arts] == [('echo', 'echo', text)]
    # artifact arrives after "working" and before "completed"
    assert k.index('artifact_update') < len(k) - 1
    # and the stored task agrees
    stored = await client.get_task(GetTaskRequest(id=task.id))
    assert state_name(stored.status.state) == 'TASK_STATE_COMPLETED'
    assert stored.artifacts[0].parts[0].text == text


@pytest.mark.timeout(40)
async def test_streaming_consolidate_progress(http, mode):
    client = await make_client(http, 'consolidate', mode, streaming=True)
    events = await stream_send(client, user_message(consolidate_text(4)))

    assert kinds(events)[0] == 'task'
    progress = []
    for e in events:
        if e.HasField('status_update'):
            m = re.fullmatch(r'transcript (\d+)/(\d+)', text_of(e.status_update.status.message.parts))
            if m:
                assert state_name(e.status_update.status.state) == 'TASK_STATE_WORKING'
                progress.append((int(m.group(1)), int(m.group(2))))
    assert progress == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert events[-1].HasField('status_update')
    assert state_name(events[-1].status_update.status.state) == 'TASK_STATE_COMPLETED'
    updates = [e.artifact_update for e in events if e.HasField('artifact_update')]
    assert updates and {u.artifact.name for u in updates} == {'facts'}
    # Text arrives as deltas, then once more whole (append false, lastChunk true).
    assert not updates[-1].append and updates[-1].last_chunk
    assert 'colour number 4' in text_of(updates[-1].artifact.parts)
    assert 'colour number 1' in text_of(updates[-1].artifact.parts)
