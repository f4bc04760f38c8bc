"""Shared helpers for driving an A2A server with the official a2a-sdk client.

Client modes (`MODES`):

* ``jsonrpc-1.0`` / ``rest-1.0``: the 1.0 ``JsonRpcTransport`` / ``RestTransport``.
  The agent card is used as served; ``ClientFactory`` picks the interface
  for the requested binding and prefers protocolVersion 1.0.
* ``grpc-1.0``: the 1.0 ``GrpcTransport`` (``lf.a2a.v1.A2AService``) on the
  card's GRPC interface: ``host:port`` of the server, and the agent's name as
  ``tenant``, which the factory copies into every request (the root card's
  interface has none: the default agent). Only the card travels over httpx.
* ``jsonrpc-0.3`` / ``rest-0.3``: the compat ``CompatJsonRpcTransport`` /
  ``CompatRestTransport``. a2a-sdk 1.3 selects them from the protocolVersion
  of the chosen ``supportedInterfaces`` entry (0.3 <= v < 1.0). Because the
  factory always prefers a 1.0 entry (and looks the interface up again by
  URL, where the 0.3 and 1.0 JSON-RPC entries share one URL), the only way
  to get the 0.3 transport from a dual-stack card is to hand the factory a
  copy of the card whose ``supportedInterfaces`` hold only the 0.3 entries.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import grpc
import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)


SWITCHBOARD_URL = os.environ.get('SWITCHBOARD_URL', 'http://127.0.0.1:8080').rstrip('/')

MODES = ['jsonrpc-1.0', 'rest-1.0', 'grpc-1.0', 'jsonrpc-0.3', 'rest-0.3']
MODES_1_0 = [m for m in MODES if m.endswith('1.0')]
BINDINGS = {'jsonrpc': 'JSONRPC', 'rest': 'HTTP+JSON', 'grpc': 'GRPC'}

S = TaskState


def agent_base(agent: str) -> str:
    """Base URL of an agent, with the trailing slash."""
    return f'{SWITCHBOARD_URL}/agents/{agent}/'


def split_mode(mode: str) -> tuple[str, str]:
    kind, version = mode.split('-')
    return BINDINGS[kind], version


def state_name(state: int) -> str:
    return TaskState.Name(state)


def text_of(parts) -> str:
    return ''.join(p.text for p in parts)


def new_text() -> str:
    return f'hello interop {uuid.uuid4().hex[:12]}'


def user_message(
    text: str, *, task_id: str | None = None, context_id: str | None = None
) -> Message:
    msg = Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        parts=[Part(text=text)],
    )
    if task_id:
        msg.task_id = task_id
    if context_id:
        msg.context_id = context_id
    return msg


@dataclass
class Wire:
    """Requests the client put on the wire (method, url, headers, JSON body)."""

    requests: list[dict] = field(default_factory=list)

    async def hook(self, request: httpx.Request) -> None:
        body = None
        try:
            raw = request.content
            if raw:
                body = json.loads(raw)
        except (httpx.RequestNotRead, ValueError):
            body = None
        self.requests.append(
            {
                'method': request.method,
                'url': str(request.url),
                'headers': dict(request.headers),
                'body': body,
            }
        )

    def last(self, predicate=lambda r: True) -> dict:
        for r in reversed(self.requests):
            if predicate(r):
                return r
        raise AssertionError(f'no matching request among {self.requests!r}')


def new_http_client(wire: Wire | None = None) -> httpx.AsyncClient:
    hooks = {'request': [wire.hook]} if wire else {}
    # httpx' default 5 s timeout is too short for long blocking sends.
    return httpx.AsyncClient(timeout=httpx.Timeout(30.0), event_hooks=hooks)


async def fetch_card(http: httpx.AsyncClient, base_url: str) -> AgentCard:
    return await A2ACardResolver(http, base_url).get_agent_card()


def only_interfaces(card: AgentCard, binding: str, version: str) -> AgentCard:
    """Copy of `card` whose supportedInterfaces keep only binding+version."""
    out = AgentCard()
    out.CopyFrom(card)
    keep = [
        i
        for i in card.supported_interfaces
        if i.protocol_binding == binding
        and i.protocol_version.split('.')[:2] == version.split('.')[:2]
    ]
    assert keep, f'card has no {binding} interface for protocolVersion {version}'
    del out.supported_interfaces[:]
    out.supported_interfaces.extend(keep)
    return out


async def make_client(
    http: httpx.AsyncClient,
    agent: str,
    mode: str,
    *,
    streaming: bool = False,
    base_url: str | None = None,
) -> Client:
    binding, version = split_mode(mode)
    card = await fetch_card(http, base_url or agent_base(agent))
    if version != '1.0':
        card = only_interfaces(card, binding, version)
    config = ClientConfig(
        streaming=streaming,
        httpx_client=http,
        supported_protocol_bindings=[binding],
        # Switchboard serves cleartext HTTP/2 on its HTTP port.
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return ClientFactory(config).create(card)


async def send(
    client: Client,
    message: Message,
    *,
    return_immediately: bool = False,
    history_length: int | None = None,
) -> Task:
    """Non-streaming SendMessage; returns the Task of the response."""
    cfg = SendMessageConfiguration(return_immediately=return_immediately)
    if history_length is not None:
        cfg.history_length = history_length
    req = SendMessageRequest(message=message, configuration=cfg)
    events = [e async for e in client.send_message(req)]
    assert len(events) == 1, events
    assert events[0].HasField('task'), f'expected a Task, got {events[0]}'
    return events[0].task


async def collect(stream: AsyncIterator[StreamResponse], timeout: float = 20.0) -> list[StreamResponse]:
    """Drains a stream; fails if it does not close within `timeout` s."""

    async def drain() -> list[StreamResponse]:
        return [e async for e in stream]

    return await asyncio.wait_for(drain(), timeout)


async def stream_send(client: Client, message: Message, timeout: float = 20.0) -> list[StreamResponse]:
    req = SendMessageRequest(message=message, configuration=SendMessageConfiguration())
    return await collect(client.send_message(req), timeout)


def kinds(events: list[StreamResponse]) -> list[str]:
    return [e.WhichOneof('payload') for e in events]


async def wait_for_state(
    client: Client, task_id: str, states: set[int], timeout: float = 15.0
) -> Task:
    """Polls GetTask until the task is in one of `states`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = await client.get_task(GetTaskRequest(id=task_id))
        if last.status.state in states:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(
        f'task {task_id} never reached {[state_name(s) for s in states]}; last={last}'
    )


def consolidate_text(n: int) -> str:
    """`n` transcripts without a contradiction."""
    return '\n'.join(f'the user likes colour number {k}' for k in range(1, n + 1))


CONTRADICTION = 'the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak'
