// Benchmark peer: an A2A 1.0 server built with the official JS SDK (@a2a-js/sdk) on express 5.
//
//   node server.mjs --port P        # listens on 127.0.0.1:P, JSON-RPC at POST /
//
// One process, the SDK's DefaultRequestHandler with its in-memory task store and its
// in-memory push-notification store and sender. The agent follows the contract of
// Switchboard's `bench` agent (crates/sb-agent/src/builtin/bench.rs), chosen by the first
// text part of the message:
// - `hold`: working, then nothing until the task is canceled;
// - `tick COUNT INTERVAL_MS DELAY_MS`: working, a pause of DELAY_MS, then COUNT working
//   updates INTERVAL_MS apart whose agent message is `t=<unix microseconds when sent>`,
//   then completed;
// - anything else: working, one artifact (id and name `echo`, the text), completed with
//   the text as the status message.
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import express from 'express';
import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const { values } = parseArgs({
  options: { port: { type: 'string' }, host: { type: 'string', default: '127.0.0.1' } },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node server.mjs --port PORT [--host HOST]');
  process.exit(2);
}

/** { kind: 'hold' } | { kind: 'tick', count, interval, delay } | { kind: 'echo' }, as bench.rs reads it. */
function parse(text) {
  const words = text.split(/\s+/).filter(Boolean);
  if (words[0] === 'hold') return { kind: 'hold' };
  if (words[0] === 'tick') {
    const numbers = words.slice(1).filter((w) => /^\d+$/.test(w)).map(Number);
    if (numbers.length === 3) {
      const [count, interval, delay] = numbers;
      return { kind: 'tick', count, interval, delay };
    }
  }
  return { kind: 'echo' };
}

const textPart = (text) => ({
  content: { $case: 'text', value: text },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

const agentMessage = (taskId, contextId, text) => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const statusUpdate = (taskId, contextId, state, text) =>
  AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: {
      state,
      message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
      timestamp: new Date().toISOString(),
    },
    metadata: undefined,
  });

// Unix time in microseconds (Date.now() has only millisecond resolution).
const unixMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

/** Resolves true after ms, or false as soon as signal aborts. */
function pause(ms, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

class BenchExecutor {
  /** taskId -> { controller, contextId } of the executions running here. */
  running = new Map();

  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage } = requestContext;
    const first = userMessage.parts.find((p) => p.content?.$case === 'text');
    const text = first ? first.content.value : '';
    const command = parse(text);
    // The SDK wants a Task as the first event of every execution.
    eventBus.publish(
      AgentEvent.task(
        requestContext.task ?? {
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        },
      ),
    );
    eventBus.publish(statusUpdate(taskId, contextId, TaskState.TASK_STATE_WORKING));
    if (command.kind === 'echo') {
      eventBus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'echo',
            name: 'echo',
            description: '',
            parts: [textPart(text)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      eventBus.publish(statusUpdate(taskId, contextId, TaskState.TASK_STATE_COMPLETED, text));
      return;
    }
    // hold and tick run until done or canceled; cancelTask publishes `canceled`.
    const controller = new AbortController();
    this.running.set(taskId, { controller, contextId });
    try {
      if (command.kind === 'hold') {
        await pause(2 ** 31 - 1, controller.signal); // ~24.8 days: until canceled
        while (!controller.signal.aborted) await pause(2 ** 31 - 1, controller.signal);
        return;
      }
      if (!(await pause(command.delay, controller.signal))) return;
      for (let i = 0; i < command.count; i++) {
        eventBus.publish(
          statusUpdate(taskId, contextId, TaskState.TASK_STATE_WORKING, `t=${unixMicros()}`),
        );
        if (!(await pause(command.interval, controller.signal))) return;
      }
      eventBus.publish(statusUpdate(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
    } finally {
      this.running.delete(taskId);
    }
  }

  cancelTask = async (taskId, eventBus) => {
    const run = this.running.get(taskId);
    if (!run) return;
    this.running.delete(taskId);
    run.controller.abort();
    eventBus.publish(statusUpdate(taskId, run.contextId, TaskState.TASK_STATE_CANCELED));
  };
}

const agentCard = {
  name: 'bench',
  description: 'Benchmark peer (@a2a-js/sdk): echo, hold, tick COUNT INTERVAL_MS DELAY_MS.',
  supportedInterfaces: [
    { url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
  ],
  provider: undefined,
  version: '1.0.0',
  documentationUrl: '',
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'bench',
      name: 'Benchmark',
      description: 'Echo, hold or tick, for load tests',
      tags: ['benchmark'],
      examples: ['hello', 'hold', 'tick 100 10 1000'],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  signatures: [],
};

const pushStore = new InMemoryPushNotificationStore();
const pushSender = new DefaultPushNotificationSender(pushStore, {
  timeout: 10000,
  tokenHeaderName: 'X-A2A-Notification-Token',
});
const requestHandler = new DefaultRequestHandler(
  agentCard,
  new InMemoryTaskStore(),
  new BenchExecutor(),
  undefined, // the default in-process event bus manager
  pushStore,
  pushSender,
);

const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

// The SDK logs every push delivered with console.info: keep to warnings and errors, as
// the Python peer does (log level warning).
console.info = () => {};
console.debug = () => {};

const server = app.listen(port, values.host);
server.keepAliveTimeout = 75_000; // longer than a load generator's idle pool timeout
server.headersTimeout = 80_000;
server.on('error', (err) => {
  console.error(`bench peer: ${err.message}`);
  process.exit(1);
});
const stop = () => server.close(() => process.exit(0)) && setTimeout(() => process.exit(0), 1000).unref();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
