"""Agent card discovery, as the official Python client sees it."""

from urllib.parse import urlsplit

import pytest

from interop import SWITCHBOARD_URL, agent_base, fetch_card


def _interfaces(card):
    return {
        (i.protocol_binding, '.'.join(i.protocol_version.split('.')[:2]), i.url)
        for i in card.supported_interfaces
    }


@pytest.mark.parametrize('agent', ['echo', 'consolidate'])
async def test_agent_card_lists_both_versions(http, agent):
    base = agent_base(agent)
    card = await fetch_card(http, base)
    assert card.name == agent
    assert card.capabilities.streaming is True
    assert card.capabilities.push_notifications is True
    ifaces = _interfaces(card)
    assert ('JSONRPC', '1.0', base + 'a2a') in ifaces
    assert ('HTTP+JSON', '1.0', base.rstrip('/')) in ifaces
    assert ('JSONRPC', '0.3', base + 'a2a') in ifaces
    # Both SDKs append /v1/... themselves, so the 0.3 REST url is the bare base.
    assert ('HTTP+JSON', '0.3', base.rstrip('/')) in ifaces
    # One gRPC target for every agent; the tenant picks the agent.
    grpc = [i for i in card.supported_interfaces if i.protocol_binding == 'GRPC']
    assert [(i.url, i.tenant, i.protocol_version) for i in grpc] == [
        (urlsplit(SWITCHBOARD_URL).netloc, agent, '1.0')
    ]


async def test_root_card_is_echo(http):
    """The root card describes echo; its interfaces may live at the root or under
    /agents/echo/ (test_send_via_root_card checks that they work)."""
    card = await fetch_card(http, SWITCHBOARD_URL + '/')
    assert card.name == 'echo'
    pairs = {(i.protocol_binding, '.'.join(i.protocol_version.split('.')[:2])) for i in card.supported_interfaces}
    assert pairs >= {('JSONRPC', '1.0'), ('HTTP+JSON', '1.0'), ('JSONRPC', '0.3'), ('HTTP+JSON', '0.3')}
    # gRPC targets are host:port (spec §5.3), the server's own address; the root's
    # names no tenant (it serves echo, the default agent).
    grpc = [(i.url, i.tenant) for i in card.supported_interfaces if i.protocol_binding == 'GRPC']
    assert grpc == [(urlsplit(SWITCHBOARD_URL).netloc, '')]
    for i in card.supported_interfaces:
        if i.protocol_binding != 'GRPC':
            assert i.url.startswith(SWITCHBOARD_URL)


async def test_card_request_is_a_plain_get(http, wire):
    await fetch_card(http, agent_base('echo'))
    req = wire.last(lambda r: r['url'].endswith('/.well-known/agent-card.json'))
    assert req['method'] == 'GET'
    assert req['url'] == agent_base('echo') + '.well-known/agent-card.json'
