"""MCP tasks (the io.modelcontextprotocol/tasks extension, SEP-2663) driven by the official
MCP Python SDK client, over stdio and streamable HTTP: work that outlasts the server's
wait comes back as an MCP task, polled with tasks/get to the guide's answer; a question
the agent asks meanwhile is answered through tasks/update; tasks/cancel cancels; ids
never given, and other callers' tasks, are refused; a client without the extension gets
the old `working` answer.

The SDK has no tasks client: `Tasks` below is one, on its extension interface (it
advertises the extension and claims `resultType: task`, which the SDK activates on the
2026-07-28 protocol it negotiates with `server/discover`), and tasks/* are sent as
plain requests. A client that declares the extension at initialize (handshake era) is
driven in raw JSON-RPC over streamable HTTP, which the SDK cannot do (see RawSession)."""

import asyncio
import contextlib
import json
import os
from typing import Any, Literal

import httpx
import pytest
from pydantic import TypeAdapter

from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.extension import ClientExtension, ResultClaim
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

URL = os.environ.get('SWITCHBOARD_URL', 'http://127.0.0.1:8080').rstrip('/')
BIN = os.environ.get('SWITCHBOARD_BIN', 'target/debug/switchboard')
GUARDED = os.environ.get('GUARDED_TOKEN')
# The wait of the server's /mcp (run.sh sets it short when it starts the server); stdio
# servers are started here, with their own.
HTTP_WAIT = os.environ.get('MCP_WAIT_SECS')
STDIO_WAIT = 2
TASKS = 'io.modelcontextprotocol/tasks'
# The consolidate agent works 200 ms per transcript line before it asks about the
# contradiction: thirty lines outlast either wait.
LONG_CONTRADICTION = '\n'.join(
    ['the user is vegetarian', 'the user lives in Paris', 'the user ordered a steak']
    + [f'the user read book number {n}' for n in range(27)]
)
ANSWER = 'Yes, the user is vegetarian; the steak was ordered for a friend.'
ANY = TypeAdapter(dict[str, Any])

TRANSPORTS = [
    'stdio',
    pytest.param('http', marks=pytest.mark.skipif(
        not HTTP_WAIT, reason='the server\'s [mcp] wait_secs is unknown (MCP_WAIT_SECS; run.sh sets it)')),
]


class TaskCreated(types.Result):
    """`CreateTaskResult`: the task a tools/call came back as."""

    result_type: Literal['task']
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class GetTask(types.Request[dict[str, Any], Literal['tasks/get']]):
    name_param = 'taskId'


class UpdateTask(types.Request[dict[str, Any], Literal['tasks/update']]):
    name_param = 'taskId'


class CancelTask(types.Request[dict[str, Any], Literal['tasks/cancel']]):
    name_param = 'taskId'


async def get_task(session, task_id: str) -> dict:
    return await session.send_request(GetTask(method='tasks/get', params={'taskId': task_id}), ANY)


async def update_task(session, task_id: str, responses: dict) -> dict:
    params = {'taskId': task_id, 'inputResponses': responses}
    return await session.send_request(UpdateTask(method='tasks/update', params=params), ANY)


async def cancel_task(session, task_id: str) -> dict:
    return await session.send_request(CancelTask(method='tasks/cancel', params={'taskId': task_id}), ANY)


class Tasks(ClientExtension):
    """The tasks extension's client: a task a call comes back as is polled until it ends,
    each question put to `answer` (its elicitation result goes back with tasks/update);
    what it saw is kept for the tests."""

    identifier = TASKS

    def __init__(self, answer=None):
        self.answer = answer
        self.created: list[TaskCreated] = []
        self.seen: list[dict] = []
        self.asked: list[str] = []

    def claims(self):
        return [ResultClaim(result_type='task', model=TaskCreated, resolve=self.resolve)]

    async def resolve(self, created: TaskCreated, ctx) -> types.CallToolResult:
        self.created.append(created)
        answered = set()
        while True:
            task = await get_task(ctx.session, created.task_id)
            self.seen.append(task)
            status = task['status']
            if status == 'completed':
                return types.CallToolResult.model_validate(task['result'])
            if status in ('cancelled', 'failed'):
                text = f'the task ended {status}: {task.get("error") or task.get("statusMessage")}'
                return types.CallToolResult(content=[types.TextContent(type='text', text=text)], is_error=True)
            if status == 'input_required':
                responses = {}
                for key, request in task['inputRequests'].items():
                    if key in answered:
                        continue
                    answered.add(key)
                    self.asked.append(request['params']['message'])
                    responses[key] = await self.answer(request['params']['message'])
                if responses:
                    await update_task(ctx.session, created.task_id, responses)
            await asyncio.sleep(task.get('pollIntervalMs', 1000) / 1000)

    def statuses(self) -> list[str]:
        return [t['status'] for t in self.seen]


@contextlib.asynccontextmanager
async def client(
    transport: str,
    extension: ClientExtension | None = None,
    token: str | None = None,
    person=None,
    stdio_wait: int = STDIO_WAIT,
):
    """A 2026-07-28 session over `transport`, with `person` as its elicitation callback."""
    if transport == 'stdio':
        args = ['mcp', '--url', URL, '--wait-secs', str(stdio_wait)]
        if token:
            args += ['--token', token]
        server = StdioServerParameters(command=BIN, args=args)
    else:
        headers = {'Authorization': f'Bearer {token}'} if token else None
        server = streamable_http_client(f'{URL}/mcp', http_client=create_mcp_http_client(headers=headers))
    async with Client(server, elicitation_callback=person, extensions=[extension] if extension else None) as c:
        assert c.protocol_version == '2026-07-28', c.protocol_version
        yield c


def answer_of(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def accept(question: str) -> dict:
    return {'action': 'accept', 'content': {'answer': ANSWER}}


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_long_work_comes_back_as_an_mcp_task_polled_to_its_artifacts(transport):
    tasks = Tasks()
    async with client(transport, tasks) as c:
        assert TASKS in (c.server_capabilities.extensions or {}), c.server_capabilities
        done = answer_of(await c.call_tool('A2A_conformance', {'text': 'tck-long-running'}))
    assert len(tasks.created) == 1, 'the call did not come back as an MCP task'
    created = tasks.created[0]
    assert created.status == 'working' and created.task_id.startswith('conformance:'), created
    assert created.ttl_ms is None and created.poll_interval_ms, created
    assert tasks.statuses()[-1] == 'completed', tasks.statuses()
    assert done['kind'] == 'task' and done['status']['state'] == 'completed', done
    assert created.task_id.endswith(':' + done['taskId']), (created.task_id, done['taskId'])
    assert done['artifacts'][0]['contents'] == [{'type': 'text', 'text': 'Long-running result'}], done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_question_asked_during_the_task_is_answered_through_it(transport):
    tasks = Tasks(answer=accept)
    async with client(transport, tasks) as c:
        done = answer_of(await c.call_tool('A2A_consolidate', {'text': LONG_CONTRADICTION}))
    assert tasks.created, 'the call did not come back as an MCP task'
    assert 'input_required' in tasks.statuses(), tasks.statuses()
    assert len(tasks.asked) == 1 and 'vegetarian' in tasks.asked[0], tasks.asked
    asking = next(t for t in tasks.seen if t['status'] == 'input_required')
    assert 'vegetarian' in asking['statusMessage'], asking
    assert done['status']['state'] == 'completed', done
    facts = [a for a in done['artifacts'] if a['name'] == 'facts']
    assert facts and 'paris' in facts[0]['contents'][0]['text'].lower(), done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_declined_question_cancels_the_task(transport):
    async def decline(question):
        return {'action': 'decline'}

    tasks = Tasks(answer=decline)
    async with client(transport, tasks) as c:
        ended = await c.call_tool('A2A_consolidate', {'text': LONG_CONTRADICTION})
    assert tasks.asked, tasks.statuses()
    assert ended.is_error and 'cancelled' in ended.content[0].text, ended
    assert tasks.statuses()[-1] == 'cancelled', tasks.statuses()


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_tasks_cancel_cancels_the_agents_task(transport):
    async with client(transport, Tasks()) as c:
        # Any text the conformance agent does not know keeps its task working until canceled.
        created = await c.session.call_tool('A2A_conformance', {'text': 'keep at it'}, allow_claimed=True)
        assert isinstance(created, TaskCreated), created
        assert (await get_task(c.session, created.task_id))['status'] == 'working'
        ack = await cancel_task(c.session, created.task_id)
        assert ack.get('resultType') == 'complete', ack
        for _ in range(50):
            task = await get_task(c.session, created.task_id)
            if task['status'] != 'working':
                break
            await asyncio.sleep(0.1)
        assert task['status'] == 'cancelled', task
        # Cancelling what ended is acknowledged too: cancellation is cooperative.
        await cancel_task(c.session, created.task_id)


@pytest.mark.parametrize('transport', ['stdio', 'http'])
async def test_task_ids_never_given_get_a_clear_error(transport):
    async with client(transport, Tasks()) as c:
        for invented in ['786512e2-9e0d-44bd-8f29-789f320fe840', 'echo:soon:1']:
            with pytest.raises(MCPError) as refused:
                await get_task(c.session, invented)
            assert refused.value.code == -32602 and 'not a taskId' in refused.value.message, refused.value
        for method in (get_task, cancel_task):
            with pytest.raises(MCPError) as unknown:
                await method(c.session, 'echo:1700000000000:no-such-task')
            assert unknown.value.code == -32602 and 'has no task' in unknown.value.message, unknown.value
        with pytest.raises(MCPError) as gone:
            await get_task(c.session, 'no-such-agent:1700000000000:t1')
        assert gone.value.code == -32602 and 'not in the fleet' in gone.value.message


@pytest.mark.skipif(not GUARDED, reason='needs the suite\'s own server (run.sh without SWITCHBOARD_URL)')
@pytest.mark.parametrize('transport', ['stdio', 'http'])
async def test_another_callers_task_is_out_of_reach(transport):
    async with client(transport, Tasks(), token=GUARDED) as c:
        done = answer_of(await c.call_tool('A2A_guarded', {'text': 'mine'}))
        # The id a task would have had: the agent and its A2A task, derivable by anyone.
        task_id = f'guarded:1700000000000:{done["taskId"]}'
        assert (await get_task(c.session, task_id))['status'] == 'completed'
    async with client(transport, Tasks()) as c:
        with pytest.raises(MCPError) as refused:
            await get_task(c.session, task_id)
        assert refused.value.code == -32602 and 'for these credentials' in refused.value.message
        with pytest.raises(MCPError):
            await cancel_task(c.session, task_id)


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_client_without_the_extension_gets_the_working_answer(transport):
    async with client(transport) as c:
        working = answer_of(await c.call_tool('A2A_conformance', {'text': 'tck-long-running'}))
        assert working['kind'] == 'task' and working['status']['state'] == 'working', working
        assert 'tell the user the taskId' in working['next'], working
        # Nor may it use tasks/*: it did not declare the extension.
        with pytest.raises(MCPError) as refused:
            await get_task(c.session, f'conformance:1700000000000:{working["taskId"]}')
        assert refused.value.code == -32021, refused.value


class RawSession:
    """A handshake-era (initialize) session over streamable HTTP, in raw JSON-RPC: the SDK
    drops a claim-bearing extension from its initialize capabilities and validates a
    handshake-era tools/call result as a CallToolResult, so it cannot take a task there."""

    def __init__(self, http: httpx.AsyncClient):
        self.http, self.session_id, self.next_id = http, None, 0

    def headers(self) -> dict:
        headers = {'Accept': 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-11-25'}
        if self.session_id:
            headers['Mcp-Session-Id'] = self.session_id
        return headers

    async def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        headers = self.headers()
        body = {'jsonrpc': '2.0', 'id': self.next_id, 'method': method, 'params': params}
        response = await self.http.post(f'{URL}/mcp', json=body, headers=headers)
        assert response.status_code == 200, response.text
        self.session_id = response.headers.get('mcp-session-id', self.session_id)
        for line in response.text.splitlines():
            if line.startswith('data:') and line[5:].strip():
                message = json.loads(line[5:])
                if message.get('id') == self.next_id:
                    return message
        raise AssertionError(f'no answer to {method}: {response.text}')

    async def initialized(self):
        body = {'jsonrpc': '2.0', 'method': 'notifications/initialized'}
        response = await self.http.post(f'{URL}/mcp', json=body, headers=self.headers())
        assert response.status_code == 202, response.text


@pytest.mark.timeout(60)
@pytest.mark.skipif(not HTTP_WAIT, reason='the server\'s [mcp] wait_secs is unknown (MCP_WAIT_SECS; run.sh sets it)')
async def test_a_client_that_declared_the_extension_at_initialize_gets_tasks_too():
    async with httpx.AsyncClient(timeout=30) as http:
        raw = RawSession(http)
        init = await raw.request('initialize', {
            'protocolVersion': '2025-11-25',
            'capabilities': {'extensions': {TASKS: {}}},
            'clientInfo': {'name': 'raw', 'version': '1'},
        })
        assert TASKS in init['result']['capabilities']['extensions'], init
        await raw.initialized()
        call = await raw.request('tools/call', {'name': 'A2A_conformance', 'arguments': {'text': 'keep at it'}})
        created = call['result']
        assert created['resultType'] == 'task' and created['status'] == 'working', created
        got = await raw.request('tasks/get', {'taskId': created['taskId']})
        assert got['result']['resultType'] == 'complete' and got['result']['status'] == 'working', got
        cancelled = await raw.request('tasks/cancel', {'taskId': created['taskId']})
        assert cancelled['result'] == {'resultType': 'complete'}, cancelled
        unknown = await raw.request('tasks/get', {'taskId': 'echo:1:none'})
        assert unknown['error']['code'] == -32602 and 'has no task' in unknown['error']['message'], unknown
