// Shared helpers for driving an A2A server with the official @a2a-js/sdk client.
//
// Client modes (MODES):
//  * jsonrpc-1.0 / rest-1.0: JsonRpcTransport / RestTransport, the card used
//    as served; ClientFactory picks the interface for the preferred binding
//    and prefers protocolVersion "1.0" (exact string match).
//  * jsonrpc-0.3 / rest-0.3: LegacyJsonRpcTransport / LegacyRestTransport. The
//    transport factories pick them only with `legacyCompat: {enabled: true}`
//    AND when the interface ClientFactory selected has a protocolVersion in
//    [0.3, 1.0). ClientFactory prefers a "1.0" entry per binding, so from a
//    dual-stack card the 0.3 transport is reached only by handing the factory
//    a copy of the card whose supportedInterfaces hold just the 0.3 entries.

import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';

import { Role, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

export const SWITCHBOARD_URL = (process.env.SWITCHBOARD_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
export const MODES = ['jsonrpc-1.0', 'rest-1.0', 'jsonrpc-0.3', 'rest-0.3'];
export const BINDINGS = { jsonrpc: 'JSONRPC', rest: 'HTTP+JSON' };
export { Role, TaskState };

export const CONTRADICTION = 'the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak';
export const ANSWER = 'Yes, the user is vegetarian; the steak was ordered for a friend.';
export const HOOK = 'http://127.0.0.1:9/hook';

/** Base URL of an agent, with the trailing slash (the card resolver needs it). */
export const agentBase = (agent) => `${SWITCHBOARD_URL}/agents/${agent}/`;

export function splitMode(mode) {
  const [kind, version] = mode.split('-');
  return { binding: BINDINGS[kind], version };
}

export const stateName = (s) => taskStateToJSON(s);
export const textOf = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
export const newText = () => `hello interop ${randomUUID().slice(0, 12)}`;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function consolidateText(n) {
  return Array.from({ length: n }, (_, i) => `the user likes colour number ${i + 1}`).join('\n');
}

export function userMessage(text, { taskId = '', contextId = '' } = {}) {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** A fetch that records every request (method, url, headers, parsed JSON body). */
export function recordingFetch() {
  const requests = [];
  const fetchImpl = async (input, init = {}) => {
    const headers = {};
    new Headers(init.headers ?? {}).forEach((v, k) => {
      headers[k] = v;
    });
    let body;
    try {
      body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    } catch {
      body = undefined;
    }
    requests.push({ method: init.method ?? 'GET', url: String(input), headers, body });
    return fetch(input, init);
  };
  const last = (pred = () => true) => {
    for (let i = requests.length - 1; i >= 0; i--) if (pred(requests[i])) return requests[i];
    assert.fail(`no matching request among ${JSON.stringify(requests.map((r) => `${r.method} ${r.url}`))}`);
  };
  return { fetchImpl, requests, last };
}

export async function fetchCard(base, fetchImpl = fetch) {
  const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } });
  return resolver.resolve(base);
}

export function onlyInterfaces(card, binding, version) {
  const keep = (card.supportedInterfaces ?? []).filter(
    (i) => i.protocolBinding.toUpperCase() === binding && i.protocolVersion.split('.').slice(0, 2).join('.') === version,
  );
  assert.ok(keep.length > 0, `card has no ${binding} interface for protocolVersion ${version}`);
  return { ...card, supportedInterfaces: keep };
}

/**
 * Creates a Client for `agent` speaking `mode`. Returns {client, wire}.
 * `wire.requests` records what the client put on the wire.
 */
export async function makeClient(agent, mode, { baseUrl, polling = false } = {}) {
  const { binding, version } = splitMode(mode);
  const wire = recordingFetch();
  let card = await fetchCard(baseUrl ?? agentBase(agent), wire.fetchImpl);
  const legacyCompat = { enabled: version !== '1.0' };
  if (version !== '1.0') card = onlyInterfaces(card, binding, version);
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl: wire.fetchImpl, legacyCompat }),
      new RestTransportFactory({ fetchImpl: wire.fetchImpl, legacyCompat }),
    ],
    preferredTransports: [binding],
    clientConfig: { polling },
  });
  const client = await factory.createFromAgentCard(card);
  assert.equal(client.transport.protocolName, binding);
  assert.equal(client.protocolVersion, version);
  return { client, wire, card };
}

export async function send(client, message, { returnImmediately = false, historyLength } = {}) {
  const configuration = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately };
  if (historyLength !== undefined) configuration.historyLength = historyLength;
  const result = await client.sendMessage({ tenant: '', message, configuration, metadata: undefined });
  assert.ok(result && typeof result.id === 'string' && result.status, `expected a Task, got ${JSON.stringify(result)}`);
  return result;
}

/** Drains an async iterator; fails if it does not end within `ms`. */
export async function collect(iter, ms = 20000) {
  const events = [];
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`stream did not close within ${ms} ms; got ${kinds(events)}`)), ms);
  });
  try {
    await Promise.race([
      (async () => {
        for await (const e of iter) events.push(e);
      })(),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
  return events;
}

export function streamSend(client, message, ms) {
  return collect(
    client.sendMessageStream({
      tenant: '',
      message,
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: false },
      metadata: undefined,
    }),
    ms,
  );
}

export const kinds = (events) => events.map((e) => e.payload?.$case);

export async function waitForState(client, taskId, states, ms = 15000) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    last = await client.getTask({ tenant: '', id: taskId });
    if (states.includes(last.status.state)) return last;
    await sleep(100);
  }
  assert.fail(`task ${taskId} never reached ${states.map(stateName)}; last=${JSON.stringify(last?.status)}`);
}

/** Error checks: JSON-RPC by envelope code, REST by HTTP status (and class for 1.0). */
export const REST_03_STATUS = { 404: [404], 400: [400, 409, 501] };

export function assertA2AError(err, mode, { cls, code, httpStatus }) {
  const { binding, version } = splitMode(mode);
  if (binding === 'JSONRPC') {
    assert.equal(err.envelopeCode, code, `expected JSON-RPC code ${code}, got ${err?.envelopeCode}: ${err}`);
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err?.constructor?.name}: ${err}`);
    return;
  }
  if (version === '1.0') {
    assert.equal(err.statusCode, httpStatus, `expected HTTP ${httpStatus}, got ${err?.statusCode}: ${err}`);
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err?.constructor?.name}: ${err}`);
  } else if (err instanceof cls) {
    // LegacyRestTransport maps a bare 0.3 body {code, message} to the class.
    return;
  } else {
    // Any other error body (e.g. a 1.0 google.rpc.Status) becomes a plain
    // Error whose message carries the HTTP status.
    const m = /Status: (\d{3})/.exec(String(err?.message));
    assert.ok(m, `expected ${cls.name} or an HTTP error, got ${err}`);
    assert.ok(REST_03_STATUS[httpStatus].includes(Number(m[1])), `expected HTTP ${REST_03_STATUS[httpStatus]}, got ${m[1]}`);
  }
}

export async function rejects(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected the call to fail');
}
