// Interop upstream: Switchboard's `echo` or `consolidate` agent on the official JS SDK
// (@a2a-js/sdk 1.3.0, express 5), serving A2A 0.3 only, for tests/interop/bridged.sh.
//
//   node upstream.mjs --agent echo|consolidate --port P   # card at /.well-known/agent-card.json
//
// One agent per process, served at the root. The SDK is a 1.0 server; its v0.3 compat
// layer (`legacyCompat`) is how it speaks 0.3, and it accepts a version only where the
// card declares an interface of it. The card declares JSON-RPC (POST /a2a) and HTTP+JSON
// (the SDK's /v1/... routes) at protocolVersion 0.3 and nothing at 1.0, so 1.0 requests
// are refused (VersionNotSupported) and the card is served in its 0.3 shape (with the
// 0.3 supportedInterfaces embedded) to a client that sends no A2A-Version or 0.3.
// The SDK's DefaultRequestHandler with its in-memory task store and push-notification
// store, and its legacy-aware push sender (0.3 bodies to 0.3-registered webhooks).
//
// The agents do what the built-ins of the same name do (crates/sb-agent/src/builtin/;
// ../python/upstream.py is the same on a2a-sdk):
// - echo: working, one artifact (id and name `echo`, the text), completed with the text.
// - consolidate: one transcript per non-empty line, a 200 ms pause and a `transcript k/N`
//   working update for each; two contradicting facts (a meat-free diet against eating
//   meat, or a statement against its negation) make it ask in input-required; each later
//   user message on the task answers one question. Then the facts stream into the `facts`
//   artifact one delta per fact, are sent once more whole (append false, last chunk), and
//   the task completes.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { A2A_LEGACY_PROTOCOL_VERSION } from '@a2a-js/sdk/compat/v0_3';
import { createLegacyAwarePushNotificationSender } from '@a2a-js/sdk/compat/v0_3/server';
import { AgentEvent, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const PAUSE_MS = 200; // per transcript, as the built-in's default pause_ms
const S = TaskState;
const FINAL = new Set([S.TASK_STATE_COMPLETED, S.TASK_STATE_CANCELED, S.TASK_STATE_FAILED, S.TASK_STATE_REJECTED]);

// --- consolidate's facts, as consolidate.rs finds and resolves them ----------------------
const DIET = new Set(['vegetarian', 'vegan']);
const MEAT = new Set(['steak', 'beef', 'chicken', 'pork', 'bacon', 'ham', 'burger', 'meat', 'lamb', 'sausage', 'fish']);
const EATING = new Set(['eat', 'eats', 'eaten', 'eating', 'ate']);
const NEGATORS = new Set(['not', 'never', 'no']);
// A negation does not reach past these ("vegetarian and never eat meat").
const BREAKS = new Set(['and', 'but', 'although', 'though', 'while', 'whereas', 'because']);
const FILLER = new Set(['the', 'a', 'an', 'user', 'is', 'does', 'do', 'did', 'to']);

const words = (text) =>
  text
    .toLowerCase()
    .replaceAll("n't", ' not')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean)
    .map((w) => (w.endsWith('s') && w.length > 4 ? w.slice(0, -1) : w));

/** The fact's clauses, each as [content word, denied by a negation before it] pairs. */
function clauses(fact) {
  const out = [];
  for (const part of fact.split(/[,;:.!?]/)) {
    let clause = [];
    let denied = false;
    for (const w of [...words(part), 'and']) {
      // a trailing break closes the last clause
      if (BREAKS.has(w)) {
        out.push(clause);
        clause = [];
        denied = false;
      } else if (NEGATORS.has(w)) denied = true;
      else if (!FILLER.has(w)) clause.push([w, denied]);
    }
  }
  return out;
}

const meatFree = (fact) =>
  fact.some(
    (c) =>
      c.some(([w, d]) => DIET.has(w) && !d) || (c.some(([w]) => EATING.has(w)) && c.some(([w, d]) => MEAT.has(w) && d)),
  );
const eatsMeat = (fact) => fact.some((c) => c.some(([w, d]) => MEAT.has(w) && !d));
const contentWords = (text) => new Set(clauses(text).flatMap((c) => c.map(([w]) => w)));

/** Whether two facts cannot both hold: the same words with others denied ("likes cats"
 *  against "does not like cats"), or a meat-free diet next to eating meat. */
function contradicts(a, b) {
  [a, b] = [clauses(a), clauses(b)];
  const terms = (fact) => new Set(fact.flat().map(([w, d]) => (d ? `!${w}` : w)));
  const plain = (set) => new Set([...set].map((t) => t.replace(/^!/, '')));
  const same = (x, y) => x.size === y.size && [...x].every((v) => y.has(v));
  const [ta, tb] = [terms(a), terms(b)];
  const deniesTheOther = !same(ta, tb) && same(plain(ta), plain(tb));
  return deniesTheOther || (meatFree(a) && eatsMeat(b)) || (meatFree(b) && eatsMeat(a));
}

function extractFacts(transcripts) {
  const facts = [];
  for (const line of transcripts.split(/\r?\n/)) {
    const fact = line.trim().replace(/[.!;]+$/, '').trim();
    if (fact && !facts.some((f) => f.toLowerCase() === fact.toLowerCase())) facts.push(fact);
  }
  return facts;
}

/** Resolves the contradictions in order, one answer each: the fact sharing more words
 *  with it stays (on a tie both, and the answer joins them). Returns the first pair left
 *  without an answer. */
function consolidate(facts, answers) {
  const pending = [...answers];
  for (;;) {
    let pair;
    for (let i = 0; i < facts.length && !pair; i++)
      for (let j = i + 1; j < facts.length && !pair; j++) if (contradicts(facts[i], facts[j])) pair = [i, j];
    if (!pair) return undefined;
    const [i, j] = pair;
    if (pending.length === 0) return [facts[i], facts[j]];
    const answer = pending.shift();
    const said = contentWords(answer);
    if (said.has('both')) continue; // as consolidate.rs: both facts stay (and so does the question)
    const score = (k) => [...contentWords(facts[k])].filter((w) => said.has(w)).length;
    const [si, sj] = [score(i), score(j)];
    if (si === sj) facts.push(`clarified by the user: ${answer.trim()}`);
    else facts.splice(si > sj ? j : i, 1);
  }
}

// --- the agents ------------------------------------------------------------------------
const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' });
const textOf = (message) =>
  message.parts
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('\n');

/** Publishes one task's events, as a2a-sdk's TaskUpdater does; remembers the last state. */
function updater(eventBus, taskId, contextId) {
  const message = (text) => ({
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  });
  const u = {
    state: undefined,
    status(state, text) {
      u.state = state;
      const status = { state, message: text === undefined ? undefined : message(text), timestamp: new Date().toISOString() };
      eventBus.publish(AgentEvent.statusUpdate({ taskId, contextId, status, metadata: undefined }));
    },
    artifact(id, text, append, lastChunk) {
      const artifact = { artifactId: id, name: id, description: '', parts: [textPart(text)], metadata: undefined, extensions: [] };
      eventBus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact, append, lastChunk, metadata: undefined }));
    },
  };
  return u;
}

/** Resolves true after ms, or false as soon as signal aborts. */
function pause(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => resolve(true), ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve(false)), { once: true });
  });
}

async function echo(texts, u) {
  const text = texts.at(-1);
  u.status(S.TASK_STATE_WORKING);
  u.artifact('echo', text, false, true);
  u.status(S.TASK_STATE_COMPLETED, text);
}

async function consolidateAgent(texts, u, signal) {
  const [transcripts, ...answers] = texts;
  const lines = transcripts.split(/\r?\n/).filter((l) => l.trim()).length;
  if (lines === 0) return u.status(S.TASK_STATE_REJECTED, 'send at least one transcript, one per line');
  if (answers.length > 0) u.status(S.TASK_STATE_WORKING, 'applying your answer');
  else {
    for (let k = 1; k <= lines; k++) {
      if (!(await pause(PAUSE_MS, signal))) return; // canceled: cancelTask says so
      u.status(S.TASK_STATE_WORKING, `transcript ${k}/${lines}`);
    }
  }
  const facts = extractFacts(transcripts);
  const open = consolidate(facts, answers);
  if (open) {
    const [a, b] = open;
    return u.status(
      S.TASK_STATE_INPUT_REQUIRED,
      `These facts contradict each other: "${a}" and "${b}". Which one is true? Reply with the fact to keep, or "both".`,
    );
  }
  // One delta per fact, then the whole text once more (append false, last chunk).
  const deltas = facts.map((fact, i) => `${i === 0 ? '' : '\n'}- ${fact}`);
  deltas.forEach((delta, i) => u.artifact('facts', delta, i > 0, false));
  u.artifact('facts', deltas.join(''), false, true);
  u.status(S.TASK_STATE_COMPLETED, `consolidated ${facts.length} facts from ${lines} transcripts`);
}

const AGENTS = {
  echo: {
    run: echo,
    description: 'Replies with the text it was sent: a task that completes with one artifact.',
    skill: { id: 'echo', name: 'Echo', description: 'Returns the message text unchanged', tags: ['echo', 'test'], examples: ['hello'] },
  },
  consolidate: {
    run: consolidateAgent,
    description:
      'Consolidates conversation transcripts (one per line) into a list of facts, asking the user when two facts contradict each other.',
    skill: {
      id: 'consolidate',
      name: 'Memory consolidation',
      description: 'Extracts facts from transcripts and resolves contradictions with the user',
      tags: ['memory', 'facts', 'input-required'],
      examples: ['the user is vegetarian\nthe user ordered a steak'],
    },
  },
};

class Executor {
  /** taskId -> { controller, contextId } of the tasks not ended here (running or waiting). */
  open = new Map();

  constructor(run) {
    this.run = run;
  }

  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage, task } = requestContext;
    const now = new Date().toISOString();
    // Every execution must start with the Task (the SDK's stream refuses anything else
    // first). A follow-up's stored task still shows the input-required it waited in; it
    // goes out as working, which it now is, so no follower reads a stale state first.
    eventBus.publish(
      AgentEvent.task(
        task
          ? { ...task, status: { state: S.TASK_STATE_WORKING, message: undefined, timestamp: now } }
          : {
              id: taskId,
              contextId,
              status: { state: S.TASK_STATE_SUBMITTED, message: undefined, timestamp: now },
              artifacts: [],
              history: [userMessage],
              metadata: undefined,
            },
      ),
    );
    // The task's user messages, oldest first (the SDK added a follow-up to the history).
    const users = (task?.history ?? [userMessage]).filter((m) => m.role === Role.ROLE_USER);
    const controller = new AbortController();
    this.open.set(taskId, { controller, contextId });
    const u = updater(eventBus, taskId, contextId);
    try {
      await this.run(users.map(textOf), u, controller.signal);
    } finally {
      if (controller.signal.aborted || FINAL.has(u.state)) this.open.delete(taskId);
    }
  }

  // Also for a task waiting for input: the SDK keeps its event bus and waits here for a
  // final state, so one must be published.
  cancelTask = async (taskId, eventBus) => {
    const run = this.open.get(taskId);
    if (!run) return;
    this.open.delete(taskId);
    run.controller.abort();
    // Published before the aborted execution returns, so the SDK sees canceled last.
    updater(eventBus, taskId, run.contextId).status(S.TASK_STATE_CANCELED);
  };
}

const { values } = parseArgs({
  options: { agent: { type: 'string' }, port: { type: 'string' }, host: { type: 'string', default: '127.0.0.1' } },
});
const port = Number(values.port);
const agent = AGENTS[values.agent];
if (!agent || !Number.isInteger(port) || port <= 0) {
  console.error('usage: node upstream.mjs --agent echo|consolidate --port PORT [--host HOST]');
  process.exit(2);
}

const base = `http://${values.host}:${port}`;
const v03 = A2A_LEGACY_PROTOCOL_VERSION;
const agentCard = {
  name: values.agent,
  description: agent.description,
  // 0.3 REST: the clients append /v1/... to the interface URL.
  supportedInterfaces: [
    { url: `${base}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: v03 },
    { url: base, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: v03 },
  ],
  provider: undefined,
  version: '1.0.0',
  documentationUrl: '',
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ ...agent.skill, inputModes: [], outputModes: [], securityRequirements: [] }],
  signatures: [],
};

const pushStore = new InMemoryPushNotificationStore();
const requestHandler = new DefaultRequestHandler(
  agentCard,
  new InMemoryTaskStore(),
  new Executor(agent.run),
  undefined, // the default in-process event bus manager
  pushStore,
  createLegacyAwarePushNotificationSender(pushStore, { timeout: 10000, tokenHeaderName: 'X-A2A-Notification-Token' }),
);

const legacyCompat = { enabled: true };
const userBuilder = UserBuilder.noAuthentication;
const app = express();
app.disable('x-powered-by');
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
app.use('/a2a', jsonRpcHandler({ requestHandler, userBuilder, legacyCompat }));
app.use(restHandler({ requestHandler, userBuilder, legacyCompat }));

// The SDK logs every push it delivers with console.info.
console.info = () => {};
console.debug = () => {};

const server = app.listen(port, values.host);
server.on('error', (err) => {
  console.error(`upstream ${values.agent}: ${err.message}`);
  process.exit(1);
});
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 1000).unref();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
