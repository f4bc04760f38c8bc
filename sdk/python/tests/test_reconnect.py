"""Reconnection: a lost stream stops its turns and the worker attaches again, also to a
task-state service restarted on the same address, and after a refused Hello."""

from __future__ import annotations

import asyncio
import socket

from conftest import fast_worker
from fake_switchboard import FakeSwitchboard

from switchboard_worker import Reporter, TaskContext


async def test_a_dropped_stream_stops_its_turns_and_the_worker_attaches_again(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)
    stopped = asyncio.Event()

    @worker.agent("echo")
    async def slow(ctx: TaskContext, report: Reporter) -> None:
        try:
            await report.working()
            await asyncio.sleep(10)
            await report.complete()
        finally:
            stopped.set()

    serving(worker)
    first = await fake.connection()
    first.assign("go")
    await fake.wait_updates(1)
    first.drop()
    second = await fake.connection(timeout=3)
    assert second.hello == first.hello
    await asyncio.wait_for(stopped.wait(), 2)
    assert second.inbox.empty(), "no TurnDone for a turn of the lost stream"
    second.assign("again")  # and the new stream serves
    await fake.wait_updates(2)


async def test_the_worker_comes_back_after_the_task_state_service_restarts(serving) -> None:
    first_service = FakeSwitchboard()
    port = await first_service.start()
    worker = fast_worker(port)

    @worker.agent("echo")
    async def echo(ctx: TaskContext, report: Reporter) -> None:
        await report.complete(ctx.text)

    serving(worker)
    await first_service.connection()
    await first_service.stop()  # the service goes away (its port closes)
    await asyncio.sleep(0.5)  # a few failed attempts, with backoff
    restarted = FakeSwitchboard()
    await restarted.start(port)
    try:
        conn = await restarted.connection(timeout=5)
        conn.assign("back")
        assert (await conn.turn_done()).settled_by_agent
        assert restarted.updates[0][1]["Status"]["message"]["parts"] == [{"text": "back"}]
    finally:
        await restarted.stop()


async def test_a_refused_hello_is_retried_with_backoff(fake: FakeSwitchboard, serving) -> None:
    fake.refuse_hello = 'agent "echo" is not registered'
    worker = fast_worker(fake.port)

    @worker.agent("echo")
    async def echo(ctx: TaskContext, report: Reporter) -> None:
        await report.complete()

    serving(worker)
    await asyncio.sleep(0.6)
    assert 2 <= fake.hellos_refused <= 10, fake.hellos_refused
    fake.refuse_hello = None  # configured meanwhile: the worker attaches
    await fake.connection(timeout=3)


async def test_a_replica_that_is_down_is_skipped_for_the_next(fake: FakeSwitchboard, serving) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    worker = fast_worker(fake.port)
    worker.tasks_url = f"http://127.0.0.1:{dead},http://127.0.0.1:{fake.port}"

    @worker.agent("echo")
    async def echo(ctx: TaskContext, report: Reporter) -> None:
        await report.complete()

    serving(worker)
    conn = await fake.connection(timeout=3)
    conn.assign("hi")
    assert (await conn.turn_done()).settled_by_agent
