"""An agent's question on the 2026-07-28 protocol (SEP-2322, multi round-trip requests),
driven by the official MCP Python SDK client over stdio and streamable HTTP: the server
may not send `elicitation/create` there, so a tools/call whose A2A task asks something
answers with an InputRequiredResult (the question as a form, the A2A task as its
requestState), which the SDK's `Client` puts to its elicitation callback and answers by
calling the tool again. An answer completes the task; a declined question cancels it;
a requestState this server never gave, or another caller's, is refused; responses are
read as tasks/update reads them; a client without elicitation gets the question as the
LLM's, as before. The handshake-era path (elicitation/create during the call) is in
test_mcp.py."""

import os

import pytest

from mcp import MCPError, types

from test_mcp_tasks import Tasks, client as tasks_client

GUARDED = os.environ.get('GUARDED_TOKEN')
OTHER = os.environ.get('OTHER_TOKEN')
# Three transcript lines: the consolidate agent asks about the contradiction well within
# any wait.
CONTRADICTION = 'the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak'
ANSWER = 'Yes, the user is vegetarian; the steak was ordered for a friend.'
ACCEPT = {'action': 'accept', 'content': {'answer': ANSWER}}

TRANSPORTS = ['stdio', 'http']


class Person:
    """The elicitation callback: answers each question with `action` and keeps it."""

    def __init__(self, action: str = 'accept'):
        self.action, self.asked = action, []

    async def __call__(self, context, params):
        self.asked.append(params.message)
        if self.action == 'accept':
            return types.ElicitResult(action='accept', content={'answer': ANSWER})
        return types.ElicitResult(action=self.action)


def client(transport: str, person: Person | None = None, token: str | None = None, extension=None):
    return tasks_client(transport, extension=extension, token=token, person=person, stdio_wait=20)


def answer_of(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def first_round(c, tool: str = 'A2A_consolidate') -> types.InputRequiredResult:
    """The call's first answer, not driven further: the agent's question."""
    first = await c.session.call_tool(tool, {'text': CONTRADICTION}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult), first
    return first


async def retry(c, first, responses, tool: str = 'A2A_consolidate'):
    return await c.session.call_tool(
        tool, {'text': CONTRADICTION}, input_responses=responses,
        request_state=first.request_state, allow_input_required=True,
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_the_person_answers_the_agents_question_and_the_call_completes(transport):
    person = Person()
    async with client(transport, person) as c:
        done = answer_of(await c.call_tool('A2A_consolidate', {'text': CONTRADICTION}))
    assert len(person.asked) == 1 and 'vegetarian' in person.asked[0], person.asked
    assert done['kind'] == 'task' and done['status']['state'] == 'completed', done
    facts = [a for a in done['artifacts'] if a['name'] == 'facts']
    assert facts and 'paris' in facts[0]['contents'][0]['text'].lower(), done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_the_question_is_one_form_keyed_by_its_message_with_the_task_as_state(transport):
    async with client(transport, Person()) as c:
        first = await first_round(c)
        [(key, request)] = first.input_requests.items()
        assert key.startswith('question-'), key
        assert request.method == 'elicitation/create' and 'vegetarian' in request.params.message, request
        assert request.params.requested_schema['properties']['answer']['type'] == 'string', request
        agent, created, task_id = first.request_state.split(':', 2)
        assert agent == 'consolidate' and created.isdigit() and task_id, first.request_state
        done = answer_of(await retry(c, first, {key: ACCEPT}))
        assert done['taskId'] == task_id and done['status']['state'] == 'completed', done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_declined_question_cancels_the_task(transport):
    for action in ('decline', 'cancel'):
        person = Person(action)
        async with client(transport, person) as c:
            ended = answer_of(await c.call_tool('A2A_consolidate', {'text': CONTRADICTION}))
        assert len(person.asked) == 1, (action, person.asked)
        assert ended['kind'] == 'task' and ended['status']['state'] == 'canceled', (action, ended)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_responses_are_read_as_tasks_update_reads_them(transport):
    async with client(transport, Person()) as c:
        first = await first_round(c)
        [key] = first.input_requests
        # Under a key never asked: ignored, and the same question comes back.
        again = await retry(c, first, {'question-never-asked': ACCEPT})
        assert isinstance(again, types.InputRequiredResult), again
        assert list(again.input_requests) == [key], again
        assert again.request_state.split(':', 2)[2] == first.request_state.split(':', 2)[2], again
        # Accepted without an answer: refused, the task still asking.
        with pytest.raises(MCPError) as empty:
            await retry(c, first, {key: {'action': 'accept', 'content': {}}})
        assert empty.value.code == -32602 and 'content.answer' in empty.value.message, empty.value
        done = answer_of(await retry(c, first, {key: ACCEPT}))
        assert done['status']['state'] == 'completed', done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_request_state_this_server_never_gave_is_refused(transport):
    async with client(transport, Person()) as c:
        first = await first_round(c)
        [key] = first.input_requests
        tampered = [
            ('tampered', 'is not one this server gave'),
            ('consolidate:soon:' + first.request_state.split(':', 2)[2], 'is not one this server gave'),
            ('consolidate:1700000000000:no-such-task', 'has no task'),
        ]
        for state, says in tampered:
            with pytest.raises(MCPError) as refused:
                await c.session.call_tool(
                    'A2A_consolidate', {'text': CONTRADICTION}, input_responses={key: ACCEPT},
                    request_state=state, allow_input_required=True,
                )
            assert refused.value.code == -32602 and says in refused.value.message, (state, refused.value)
        # Another tool's call cannot be continued with it either.
        with pytest.raises(MCPError) as elsewhere:
            await retry(c, first, {key: ACCEPT}, tool='A2A_echo')
        assert 'continues a call of A2A_consolidate' in elsewhere.value.message, elsewhere.value
        # Nothing reached the task: it still asks, and takes its answer.
        done = answer_of(await retry(c, first, {key: ACCEPT}))
        assert done['status']['state'] == 'completed', done


@pytest.mark.timeout(60)
@pytest.mark.skipif(not (GUARDED and OTHER), reason='needs the suite\'s own server (run.sh without SWITCHBOARD_URL)')
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_another_callers_request_state_is_out_of_reach(transport):
    tool = 'A2A_guarded-consolidate'
    async with client(transport, Person(), token=GUARDED) as mine:
        first = await first_round(mine, tool)
        [key] = first.input_requests
        # A caller the agent takes, but another principal: the task is not theirs.
        async with client(transport, Person(), token=OTHER) as other:
            with pytest.raises(MCPError) as refused:
                await retry(other, first, {key: ACCEPT}, tool=tool)
            assert refused.value.code == -32602, refused.value
            assert 'does not hold' in refused.value.message and 'for these credentials' in refused.value.message
        again = await retry(mine, first, {}, tool=tool)
        assert isinstance(again, types.InputRequiredResult) and list(again.input_requests) == [key], again
        done = answer_of(await retry(mine, first, {key: ACCEPT}, tool=tool))
        assert done['status']['state'] == 'completed', done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_client_without_elicitation_gets_the_question_as_the_llms(transport):
    async with client(transport) as c:
        first = await c.session.call_tool('A2A_consolidate', {'text': CONTRADICTION}, allow_input_required=True)
        assert isinstance(first, types.CallToolResult), first
        waiting = answer_of(first)
        assert waiting['status']['state'] == 'input-required' and 'vegetarian' in waiting['question'], waiting


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_tasks_client_that_takes_forms_is_asked_within_the_call(transport):
    person, tasks = Person(), Tasks()
    async with client(transport, person, extension=tasks) as c:
        done = answer_of(await c.call_tool('A2A_consolidate', {'text': CONTRADICTION}))
    assert len(person.asked) == 1 and not tasks.created, (person.asked, tasks.created)
    assert done['status']['state'] == 'completed', done
