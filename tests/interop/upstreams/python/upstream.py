"""Interop upstream: Switchboard's `echo` or `consolidate` agent on the official Python
SDK (a2a-sdk 1.3.0), an A2A 1.0 server for tests/interop/bridged.sh to bridge.

    python upstream.py --agent echo|consolidate --port P   # card at /.well-known/agent-card.json

One agent per process, served at the root: JSON-RPC at POST /a2a, HTTP+JSON (REST) at
/message:send etc., both A2A 1.0. The SDK's DefaultRequestHandler with its in-memory
task store and push-notification config store and sender; streaming and push on.

The agents do what the built-ins of the same name do (crates/sb-agent/src/builtin/), so
the interop suite sees the same thing through the bridge as it does from Switchboard:

- echo: working, one artifact (id and name `echo`, the text), completed with the text.
- consolidate: one transcript per non-empty line, a 200 ms pause and a `transcript k/N`
  working update for each; two contradicting facts (a meat-free diet against eating
  meat, or a statement against its negation) make it ask in input-required; each later
  user message on the task answers one question. Then the facts stream into the `facts`
  artifact one delta per fact, are sent once more whole (append false, last chunk), and
  the task completes.
"""

import argparse
import asyncio
import os
import re

# Before the SDK is imported: its tracing decorators read this at import time.
os.environ.setdefault('OTEL_INSTRUMENTATION_A2A_SDK_ENABLED', 'false')

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from a2a.helpers.proto_helpers import new_task, new_text_part  # noqa: E402
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import (  # noqa: E402
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import (  # noqa: E402
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types.a2a_pb2 import (  # noqa: E402
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    TaskState,
)

PAUSE_S = 0.2  # per transcript, as the built-in's default pause_ms

# --- consolidate's facts, as consolidate.rs finds and resolves them ----------------------
DIET = {'vegetarian', 'vegan'}
MEAT = {'steak', 'beef', 'chicken', 'pork', 'bacon', 'ham', 'burger', 'meat', 'lamb', 'sausage', 'fish'}
EATING = {'eat', 'eats', 'eaten', 'eating', 'ate'}
NEGATORS = {'not', 'never', 'no'}
# A negation does not reach past these ("vegetarian and never eat meat").
BREAKS = {'and', 'but', 'although', 'though', 'while', 'whereas', 'because'}
FILLER = {'the', 'a', 'an', 'user', 'is', 'does', 'do', 'did', 'to'}


def words(text: str) -> list[str]:
    split = re.split(r'[\W_]+', text.lower().replace("n't", ' not'))
    return [w[:-1] if w.endswith('s') and len(w) > 4 else w for w in split if w]


def clauses(fact: str) -> list[list[tuple[str, bool]]]:
    """The fact's clauses, each as (content word, denied by a negation before it)."""
    out = []
    for part in re.split(r'[,;:.!?]', fact):
        clause: list[tuple[str, bool]] = []
        denied = False
        for w in words(part) + ['and']:  # a trailing break closes the last clause
            if w in BREAKS:
                out.append(clause)
                clause, denied = [], False
            elif w in NEGATORS:
                denied = True
            elif w not in FILLER:
                clause.append((w, denied))
    return out


def meat_free(fact) -> bool:
    return any(
        any(w in DIET and not d for w, d in c)
        or (any(w in EATING for w, _ in c) and any(w in MEAT and d for w, d in c))
        for c in fact
    )


def eats_meat(fact) -> bool:
    return any(w in MEAT and not d for c in fact for w, d in c)


def contradicts(a: str, b: str) -> bool:
    """Whether two facts cannot both hold: the same words with others denied ("likes cats"
    against "does not like cats"), or a meat-free diet next to eating meat."""
    a, b = clauses(a), clauses(b)
    terms_a, terms_b = {t for c in a for t in c}, {t for c in b for t in c}
    denies = terms_a != terms_b and {w for w, _ in terms_a} == {w for w, _ in terms_b}
    return denies or (meat_free(a) and eats_meat(b)) or (meat_free(b) and eats_meat(a))


def content_words(text: str) -> set[str]:
    return {w for c in clauses(text) for w, _ in c}


def extract_facts(transcripts: str) -> list[str]:
    facts: list[str] = []
    for line in transcripts.splitlines():
        fact = line.strip().rstrip('.!;').strip()
        if fact and fact.lower() not in (f.lower() for f in facts):
            facts.append(fact)
    return facts


def consolidate(facts: list[str], answers: list[str]) -> tuple[str, str] | None:
    """Resolves the contradictions in order, one answer each: the fact sharing more words
    with it stays (on a tie both, and the answer joins them). Returns the first pair left
    without an answer."""
    answers = iter(answers)
    while True:
        pair = next(
            ((i, j) for i in range(len(facts)) for j in range(i + 1, len(facts))
             if contradicts(facts[i], facts[j])),
            None,
        )
        if pair is None:
            return None
        i, j = pair
        answer = next(answers, None)
        if answer is None:
            return facts[i], facts[j]
        said = content_words(answer)
        if 'both' in said:
            continue  # as consolidate.rs: both facts stay (and so does the question)
        si, sj = (len(content_words(facts[k]) & said) for k in (i, j))
        if si == sj:
            facts.append(f'clarified by the user: {answer.strip()}')
        else:
            del facts[j if si > sj else i]


# --- the agents ------------------------------------------------------------------------
def text_of(message) -> str:
    return '\n'.join(p.text for p in message.parts if p.WhichOneof('content') == 'text')


async def echo(texts: list[str], updater: TaskUpdater) -> None:
    text = texts[-1]
    await updater.start_work()
    await updater.add_artifact(
        [new_text_part(text)], artifact_id='echo', name='echo', append=False, last_chunk=True
    )
    await updater.complete(updater.new_agent_message([new_text_part(text)]))


async def consolidate_agent(texts: list[str], updater: TaskUpdater) -> None:
    say = lambda text: updater.new_agent_message([new_text_part(text)])  # noqa: E731
    transcripts, answers = texts[0], texts[1:]
    lines = sum(1 for line in transcripts.splitlines() if line.strip())
    if lines == 0:
        await updater.reject(say('send at least one transcript, one per line'))
        return
    if answers:
        await updater.update_status(TaskState.TASK_STATE_WORKING, say('applying your answer'))
    else:
        for k in range(1, lines + 1):
            await asyncio.sleep(PAUSE_S)  # a cancel interrupts it (CancelledError)
            await updater.update_status(TaskState.TASK_STATE_WORKING, say(f'transcript {k}/{lines}'))
    facts = extract_facts(transcripts)
    open_pair = consolidate(facts, answers)
    if open_pair:
        a, b = open_pair
        await updater.requires_input(say(
            f'These facts contradict each other: "{a}" and "{b}". Which one is true? '
            'Reply with the fact to keep, or "both".'
        ))
        return
    # One delta per fact, then the whole text once more (append false, last chunk).
    deltas = [('' if i == 0 else '\n') + f'- {fact}' for i, fact in enumerate(facts)]
    for i, delta in enumerate(deltas):
        await updater.add_artifact(
            [new_text_part(delta)], artifact_id='facts', name='facts', append=i > 0, last_chunk=False
        )
    await updater.add_artifact(
        [new_text_part(''.join(deltas))], artifact_id='facts', name='facts', append=False, last_chunk=True
    )
    await updater.complete(say(f'consolidated {len(facts)} facts from {lines} transcripts'))


AGENTS = {
    'echo': (
        echo,
        'Replies with the text it was sent: a task that completes with one artifact.',
        AgentSkill(id='echo', name='Echo', description='Returns the message text unchanged',
                   tags=['echo', 'test'], examples=['hello']),
    ),
    'consolidate': (
        consolidate_agent,
        'Consolidates conversation transcripts (one per line) into a list of facts, '
        'asking the user when two facts contradict each other.',
        AgentSkill(id='consolidate', name='Memory consolidation',
                   description='Extracts facts from transcripts and resolves contradictions with the user',
                   tags=['memory', 'facts', 'input-required'],
                   examples=['the user is vegetarian\nthe user ordered a steak']),
    ),
}


class Executor(AgentExecutor):
    def __init__(self, run):
        self.run = run

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            # A first message: the SDK wants the Task before any update.
            task = new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED,
                            history=[context.message])
            await event_queue.enqueue_event(task)
        # The task's user messages, oldest first. The SDK adds a follow-up to the stored
        # history only with the first event it causes, so it may not be there yet.
        users = [m for m in task.history if m.role == Role.ROLE_USER]
        if all(m.message_id != context.message.message_id for m in users):
            users.append(context.message)
        await self.run([text_of(m) for m in users], TaskUpdater(event_queue, task.id, task.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The SDK then cancels execute() (CancelledError) and keeps this final state.
        task = context.current_task
        task_id = task.id if task else context.task_id
        context_id = task.context_id if task else context.context_id
        await TaskUpdater(event_queue, task_id, context_id).cancel()


def build_app(agent: str, host: str, port: int) -> Starlette:
    run, description, skill = AGENTS[agent]
    base = f'http://{host}:{port}'
    card = AgentCard(
        name=agent,
        description=description,
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(url=f'{base}/a2a', protocol_binding='JSONRPC', protocol_version='1.0'),
            AgentInterface(url=base, protocol_binding='HTTP+JSON', protocol_version='1.0'),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[skill],
    )
    push_store = InMemoryPushNotificationConfigStore()
    handler = DefaultRequestHandler(
        agent_executor=Executor(run),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_store,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(timeout=10), config_store=push_store),
    )
    # JSON-RPC first: the REST routes include a catch-all /{tenant}/... mount.
    routes = (
        create_agent_card_routes(card)
        + create_jsonrpc_routes(handler, rpc_url='/a2a')
        + create_rest_routes(handler)
    )
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--agent', choices=sorted(AGENTS), required=True)
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--host', default='127.0.0.1')
    args = parser.parse_args()
    uvicorn.run(build_app(args.agent, args.host, args.port), host=args.host, port=args.port,
                access_log=False, log_level='warning', lifespan='off')


if __name__ == '__main__':
    main()
