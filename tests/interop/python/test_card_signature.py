"""Signed cards (A2A 1.0 §8.4), verified by the official Python SDK's own verifier
(a2a.utils.signing: JCS with the SDK's empty-value rules, PyJWT for the JWS), with the
keys Switchboard publishes at the `jku` its signatures name."""

import base64
import json

import pytest
from a2a.types import AgentCard
from a2a.utils import signing
from google.protobuf.json_format import ParseDict
from jwt.api_jwk import PyJWK

from interop import SWITCHBOARD_URL, agent_base

JWKS_URL = SWITCHBOARD_URL + '/.well-known/jwks.json'


async def _card_json(http, url, version):
    headers = {'A2A-Version': version} if version else {}
    response = await http.get(url + '.well-known/agent-card.json', headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def _verifier(http):
    response = await http.get(JWKS_URL)
    assert response.status_code == 200, response.text
    keys = {k['kid']: PyJWK(k) for k in response.json()['keys']}
    asked = []

    def key_for(kid, jku):
        asked.append(jku)
        return keys[kid]

    return signing.create_signature_verifier(key_for, ['ES256', 'EdDSA']), asked


@pytest.mark.parametrize('version', ['1.0', None], ids=['v1-card', 'merged-card'])
@pytest.mark.parametrize('where', ['echo', 'consolidate', 'root'])
async def test_served_cards_verify_and_tampered_ones_do_not(http, where, version):
    url = SWITCHBOARD_URL + '/' if where == 'root' else agent_base(where)
    raw = await _card_json(http, url, version)
    assert raw.get('signatures'), f'unsigned card: {raw}'
    header = json.loads(base64.urlsafe_b64decode(raw['signatures'][0]['protected'] + '=='))
    assert header['typ'] == 'JOSE' and header['alg'] in ('ES256', 'EdDSA') and header['kid']
    assert header['jku'] == JWKS_URL
    verify, asked = await _verifier(http)
    card = ParseDict(raw, AgentCard(), ignore_unknown_fields=True)
    verify(card)
    assert asked == [JWKS_URL]
    card.description += ' (tampered)'
    with pytest.raises(signing.InvalidSignaturesError):
        verify(card)
    card = ParseDict(raw, AgentCard(), ignore_unknown_fields=True)
    card.skills[0].tags.append('smuggled')
    with pytest.raises(signing.InvalidSignaturesError):
        verify(card)
