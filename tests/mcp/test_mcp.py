"""Switchboard's MCP server driven by the official MCP Python SDK client, over stdio
(`switchboard mcp --url …`) and streamable HTTP (`/mcp` on the gateway): the fleet's
agents listed as A2A_ tools, a message reply, a completed task with artifacts, an
input-required task continued with its taskId and contextId, invented identifiers
refused, and a newly registered agent appearing as a tool (list-changed)."""

import asyncio
import contextlib
import os
import uuid

import httpx
import pytest

from mcp import types

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

URL = os.environ.get('SWITCHBOARD_URL', 'http://127.0.0.1:8080').rstrip('/')
BIN = os.environ.get('SWITCHBOARD_BIN', 'target/debug/switchboard')
ADMIN = os.environ.get('SWITCHBOARD_ADMIN_TOKEN')
GUARDED = os.environ.get('GUARDED_TOKEN')
CONTRADICTION = 'the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak'
ANSWER = 'Yes, the user is vegetarian; the steak was ordered for a friend.'

TRANSPORTS = ['stdio', 'http']


class Notices:
    """Counts tools/list_changed notifications as they come."""

    def __init__(self):
        self.changed = asyncio.Event()

    async def handle(self, message):
        if getattr(getattr(message, 'root', message), 'method', None) == 'notifications/tools/list_changed':
            self.changed.set()


async def tools_once_listed(s, notices: Notices, name: str, secs: float) -> dict:
    """The tools as listed after a change notice that brought `name`. Other tests may
    register agents meanwhile, each announced by a notice of its own, so one notice is not
    necessarily this one; a listing without `name` waits for the next."""
    listed: list[str] = []

    async def next_listing_with_name():
        while True:
            await notices.changed.wait()
            notices.changed.clear()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            if name in tools:
                return tools
            listed[:] = sorted(tools)

    try:
        return await asyncio.wait_for(next_listing_with_name(), secs)
    except TimeoutError:
        raise AssertionError(f'no change notice brought {name} within {secs}s; last listed: {listed}') from None


@contextlib.asynccontextmanager
async def session(transport: str, notices: Notices | None = None, token: str | None = None, elicit=None):
    handler = notices.handle if notices else None
    if transport == 'stdio':
        args = ['mcp', '--url', URL, '--wait-secs', '20']
        if token:
            args += ['--token', token]
        opened = stdio_client(StdioServerParameters(command=BIN, args=args))
    else:
        headers = {'Authorization': f'Bearer {token}'} if token else None
        opened = streamable_http_client(f'{URL}/mcp', http_client=create_mcp_http_client(headers=headers))
    async with opened as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, message_handler=handler, elicitation_callback=elicit) as s:
            await s.initialize()
            yield s


def answer_of(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def refusal_of(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_the_agents_are_tools_described_by_their_cards(transport):
    async with session(transport) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        for name in ['A2A_echo', 'A2A_consolidate', 'A2A_conformance', 'A2A_fleet']:
            assert name in tools, sorted(tools)
        echo = tools['A2A_echo']
        assert 'Returns the message text unchanged' in echo.description
        assert 'Examples: "hello"' in echo.description
        schema = echo.input_schema
        assert set(schema['properties']) == {'text', 'data', 'taskId', 'contextId', 'referenceTaskIds'}


@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_message_reply_and_a_completed_task(transport):
    async with session(transport) as s:
        reply = answer_of(await s.call_tool('A2A_conformance', {'text': 'tck-message-response hello'}))
        assert reply['kind'] == 'message', reply
        assert reply['contextId']
        assert any(c['type'] == 'text' for c in reply['contents']), reply

        done = answer_of(await s.call_tool('A2A_echo', {'text': 'say it back'}))
        assert done['kind'] == 'task', done
        assert done['status']['state'] == 'completed', done
        assert done['taskId'] and done['contextId']
        assert done['artifacts'][0]['contents'] == [{'type': 'text', 'text': 'say it back'}]


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_an_input_required_task_is_continued_with_its_ids(transport):
    async with session(transport) as s:
        asked = answer_of(await s.call_tool('A2A_consolidate', {'text': CONTRADICTION}))
        assert asked['kind'] == 'task'
        assert asked['status']['state'] == 'input-required', asked
        assert 'vegetarian' in asked['question']
        done = answer_of(await s.call_tool('A2A_consolidate', {
            'text': ANSWER, 'taskId': asked['taskId'], 'contextId': asked['contextId'],
        }))
        assert done['taskId'] == asked['taskId']
        assert done['status']['state'] == 'completed', done
        facts = [a for a in done['artifacts'] if a['name'] == 'facts']
        assert facts and 'paris' in facts[0]['contents'][0]['text'].lower(), done

        # The ended task takes no more: a new request is what to do.
        ended = refusal_of(await s.call_tool('A2A_consolidate', {
            'text': 'more', 'taskId': asked['taskId'], 'contextId': asked['contextId'],
        }))
        assert 'takes no more messages' in ended and 'omit taskId' in ended
        # The context, reused on a new request, is accepted.
        again = answer_of(await s.call_tool('A2A_echo', {'text': 'next'}))
        follow = answer_of(await s.call_tool('A2A_echo', {'text': 'and again', 'contextId': again['contextId']}))
        assert follow['contextId'] == again['contextId']


@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_invented_ids_are_refused(transport):
    async with session(transport) as s:
        task = refusal_of(await s.call_tool('A2A_echo', {'text': 'x', 'taskId': 'task-123'}))
        assert 'never invent a taskId' in task and 'Omit it' in task
        context = refusal_of(await s.call_tool('A2A_echo', {'text': 'x', 'contextId': str(uuid.uuid4())}))
        assert 'never invent a contextId' in context
        unknown = refusal_of(await s.call_tool('A2A_echo', {'txt': 'x'}))
        assert 'arguments' in unknown
        empty = refusal_of(await s.call_tool('A2A_echo', {'text': ' '}))
        assert 'non-empty' in empty


@pytest.mark.timeout(40)
@pytest.mark.skipif(not ADMIN, reason='registering an agent needs SWITCHBOARD_ADMIN_TOKEN')
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_registering_an_agent_adds_its_tool(transport):
    notices = Notices()
    name = f'mcp-new-{uuid.uuid4().hex[:8]}'
    async with session(transport, notices) as s:
        before = {t.name for t in (await s.list_tools()).tools}
        assert f'A2A_{name}' not in before
        async with httpx.AsyncClient() as http:
            put = await http.put(
                f'{URL}/registry/agents/{name}',
                json={'kind': 'echo', 'description': 'A new echo for the MCP test'},
                headers={'Authorization': f'Bearer {ADMIN}'},
            )
            assert put.status_code in (200, 201), put.text
            try:
                after = await tools_once_listed(s, notices, f'A2A_{name}', 15)
                assert 'A new echo for the MCP test' in after[f'A2A_{name}'].description
                done = answer_of(await s.call_tool(f'A2A_{name}', {'text': 'new'}))
                assert done['status']['state'] == 'completed'
            finally:
                await http.delete(
                    f'{URL}/registry/agents/{name}', headers={'Authorization': f'Bearer {ADMIN}'}
                )


@pytest.mark.skipif(not GUARDED, reason='needs the suite\'s own server (run.sh without SWITCHBOARD_URL)')
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_call_carries_the_callers_credentials(transport):
    async with session(transport) as s:
        refused = refusal_of(await s.call_tool('A2A_guarded', {'text': 'let me in'}))
        assert 'refused' in refused, refused
    async with session(transport, token=GUARDED) as s:
        done = answer_of(await s.call_tool('A2A_guarded', {'text': 'let me in'}))
        assert done['status']['state'] == 'completed', done


@pytest.mark.timeout(60)
@pytest.mark.parametrize('transport', TRANSPORTS)
async def test_a_client_that_can_be_asked_gets_the_agents_question(transport):
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action='accept', content={'answer': ANSWER})

    async with session(transport, elicit=elicit) as s:
        done = answer_of(await s.call_tool('A2A_consolidate', {'text': CONTRADICTION}))
        assert len(asked) == 1 and 'vegetarian' in asked[0], asked
        assert done['status']['state'] == 'completed', done
        assert any(a['name'] == 'facts' for a in done['artifacts']), done

    async def decline(context, params):
        return types.ElicitResult(action='decline')

    async with session(transport, elicit=decline) as s:
        waiting = answer_of(await s.call_tool('A2A_consolidate', {'text': CONTRADICTION}))
        assert waiting['status']['state'] == 'input-required', waiting
        assert 'vegetarian' in waiting['question']
