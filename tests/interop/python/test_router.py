"""The routing agent (/agents/fleet/) driven by the official client in every mode:
a message naming the `consolidate` skill is routed, its question passed through,
answered on the routed task, and the routing recorded on the task."""

import pytest

from google.protobuf.json_format import MessageToDict

from a2a.types import GetTaskRequest

from interop import CONTRADICTION, make_client, send, state_name, stream_send, text_of, user_message

ANSWER = 'Yes, the user is vegetarian; the steak was ordered for a friend.'


def routing_of(task) -> dict:
    return MessageToDict(task.metadata)['switchboard.routing']


@pytest.mark.timeout(40)
async def test_a_routed_task_asks_and_completes(http, mode):
    client = await make_client(http, 'fleet', mode)
    message = user_message(CONTRADICTION)
    message.metadata.update({'skill': 'consolidate'})
    asked = await send(client, message)
    assert state_name(asked.status.state) == 'TASK_STATE_INPUT_REQUIRED'
    assert 'vegetarian' in text_of(asked.status.message.parts).lower()
    routing = routing_of(asked)
    assert routing['skill'] == 'consolidate'
    [attempt] = routing['attempts']
    assert attempt['agent'] == 'consolidate' and attempt['taskId']

    done = await send(client, user_message(ANSWER, task_id=asked.id, context_id=asked.context_id))
    assert done.id == asked.id
    assert state_name(done.status.state) == 'TASK_STATE_COMPLETED'
    assert [a.name for a in done.artifacts] == ['facts']
    assert 'paris' in text_of(done.artifacts[0].parts).lower()
    [attempt] = routing_of(done)['attempts']
    assert attempt['outcome'] == 'completed' and attempt['waited'] is True

    # The agent's own task is the caller's too, readable where it ran.
    direct = await make_client(http, 'consolidate', mode)
    made = await direct.get_task(GetTaskRequest(id=attempt['taskId']))
    assert state_name(made.status.state) == 'TASK_STATE_COMPLETED'


@pytest.mark.timeout(40)
async def test_a_routed_task_streams(http, mode):
    client = await make_client(http, 'fleet', mode, streaming=True)
    message = user_message('say this back')
    message.metadata.update({'skillHint': 'echo'})
    events = await stream_send(client, message)
    last = events[-1]
    assert last.HasField('status_update'), events
    assert state_name(last.status_update.status.state) == 'TASK_STATE_COMPLETED'
    texts = [
        text_of(e.artifact_update.artifact.parts) for e in events if e.HasField('artifact_update')
    ]
    assert texts and texts[-1] == 'say this back', texts
