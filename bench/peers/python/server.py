"""Benchmark peer: an A2A 1.0 server built with the official Python SDK (a2a-sdk).

    python server.py --port P        # listens on 127.0.0.1:P, JSON-RPC at POST /

One process (uvicorn with uvloop and httptools, no reloader, no workers), the SDK's
DefaultRequestHandler with its in-memory task store and its push-notification config
store and sender. The agent follows the contract of Switchboard's `bench` agent
(crates/sb-agent/src/builtin/bench.rs), chosen by the first text part of the message:

- `hold`: working, then nothing until the task is canceled;
- `tick COUNT INTERVAL_MS DELAY_MS`: working, a pause of DELAY_MS, then COUNT working
  updates INTERVAL_MS apart whose agent message is `t=<unix microseconds when sent>`,
  then completed;
- anything else: working, one artifact (id and name `echo`, the text), completed with
  the text as the status message.
"""

import argparse
import asyncio
import os
import time

# Before the SDK is imported: its tracing decorators read this at import time.
os.environ.setdefault('OTEL_INSTRUMENTATION_A2A_SDK_ENABLED', 'false')

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from a2a.helpers.proto_helpers import (  # noqa: E402
    new_task,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext  # noqa: E402
from a2a.server.events import EventQueue  # noqa: E402
from a2a.server.request_handlers import DefaultRequestHandler  # noqa: E402
from a2a.server.routes import (  # noqa: E402
    create_agent_card_routes,
    create_jsonrpc_routes,
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
    TaskState,
)


def parse(text: str):
    """('hold',) | ('tick', count, interval_s, delay_s) | ('echo',), as bench.rs reads it."""
    words = text.split()
    if words[:1] == ['hold']:
        return ('hold',)
    if words[:1] == ['tick']:
        numbers = [int(w) for w in words[1:] if w.isdigit()]
        if len(numbers) == 3:
            count, interval_ms, delay_ms = numbers
            return ('tick', count, interval_ms / 1000, delay_ms / 1000)
    return ('echo',)


class BenchExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        text = next((p.text for p in message.parts if p.WhichOneof('content') == 'text'), '')
        command = parse(text)
        task = context.current_task
        if task is None:
            # The SDK wants the Task before any update (state submitted).
            task = new_task(
                context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED,
                history=[message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        if command[0] == 'echo':
            await updater.add_artifact(
                [new_text_part(text)], artifact_id='echo', name='echo',
                append=False, last_chunk=True,
            )
            await updater.complete(updater.new_agent_message([new_text_part(text)]))
        elif command[0] == 'hold':
            # Canceled by the SDK (CancelledError) on CancelTask; cancel() publishes canceled.
            await asyncio.Event().wait()
        else:
            _, count, interval, delay = command
            await asyncio.sleep(delay)
            for _ in range(count):
                stamp = f't={time.time_ns() // 1000}'
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING,
                    updater.new_agent_message([new_text_part(stamp)]),
                )
                await asyncio.sleep(interval)
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        task_id = task.id if task else context.task_id
        context_id = task.context_id if task else context.context_id
        await TaskUpdater(event_queue, task_id, context_id).cancel()


def agent_card(port: int, streaming: bool = True) -> AgentCard:
    return AgentCard(
        name='bench',
        description='Benchmark peer (a2a-sdk): echo, hold, tick COUNT INTERVAL_MS DELAY_MS.',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(
                url=f'http://127.0.0.1:{port}/',
                protocol_binding='JSONRPC',
                protocol_version='1.0',
            )
        ],
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=True),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id='bench',
                name='Benchmark',
                description='Echo, hold or tick, for load tests',
                tags=['benchmark'],
                examples=['hello', 'hold', 'tick 100 10 1000'],
            )
        ],
    )


def build_app(port: int, streaming: bool = True) -> Starlette:
    card = agent_card(port, streaming)
    push_store = InMemoryPushNotificationConfigStore()
    push_sender = BasePushNotificationSender(
        httpx.AsyncClient(timeout=10), config_store=push_store
    )
    handler = DefaultRequestHandler(
        agent_executor=BenchExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=push_store,
        push_sender=push_sender,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url='/')
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--port', type=int, required=True)
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument(
        '--no-streaming',
        action='store_true',
        help='the card says streaming: false (callers then poll or take push notifications)',
    )
    args = parser.parse_args()
    uvicorn.run(
        build_app(args.port, streaming=not args.no_streaming),
        host=args.host,
        port=args.port,
        loop='uvloop',
        http='httptools',
        access_log=False,
        log_level='warning',
        lifespan='off',
        server_header=False,
        date_header=False,
    )


if __name__ == '__main__':
    main()
