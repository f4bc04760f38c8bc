"""Cancellation (cooperative, then forced after the grace period) and refused updates."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from conftest import fast_worker
from fake_switchboard import FakeSwitchboard

from switchboard_worker import Reporter, TaskContext, TurnCanceled, UpdateRefused
from switchboard_worker.turn import DID_NOT_STOP


async def test_a_cancel_is_seen_by_the_agent_and_later_reports_are_refused(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)
    saw: list[str] = []

    @worker.agent("echo")
    async def slow(ctx: TaskContext, report: Reporter) -> None:
        await report.working("started")
        try:
            await ctx.sleep(10)
        except TurnCanceled:
            saw.append("canceled")
        with pytest.raises(TurnCanceled):
            await report.complete("too late")
        saw.append("report refused")

    serving(worker)
    conn = await fake.connection()
    assignment = conn.assign("go", task_id="t")
    await fake.wait_updates(1)
    conn.cancel(assignment, "t")
    done = await conn.turn_done(timeout=2)
    assert (done.settled_by_agent, done.error) == (False, "")
    assert saw == ["canceled", "report refused"]
    assert len(fake.updates) == 1, "nothing reported after the cancel"


async def test_an_agent_that_ignores_a_cancel_is_stopped_after_the_grace_period(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port, cancel_grace=0.2)
    stopped = asyncio.Event()

    @worker.agent("echo")
    async def stubborn(ctx: TaskContext, report: Reporter) -> None:
        await report.working()
        try:
            await asyncio.sleep(10)  # does not look at ctx.cancelled
        finally:
            stopped.set()

    serving(worker)
    conn = await fake.connection()
    assignment = conn.assign("go")
    await fake.wait_updates(1)
    conn.cancel(assignment)
    done = await conn.turn_done(timeout=2)
    assert (done.settled_by_agent, done.error) == (False, DID_NOT_STOP)
    assert stopped.is_set()


async def test_a_cancel_for_a_turn_already_done_is_ignored(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)

    @worker.agent("echo")
    async def quick(ctx: TaskContext, report: Reporter) -> None:
        await report.complete("done")

    serving(worker)
    conn = await fake.connection()
    first = conn.assign("one")
    await conn.turn_done()
    conn.cancel(first)  # as Switchboard does after the agent's own final update
    conn.assign("two")
    done = await conn.turn_done()
    assert done.settled_by_agent and not conn.closed.is_set()


async def test_a_refused_update_raises_the_a2a_error_and_fails_the_turn(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)
    errors: list[UpdateRefused] = []
    error = {"kind": "UnsupportedOperation", "message": "task t cannot move from failed to working",
             "task_id": "t", "retryable": False, "field_violations": []}
    fake.refuse_update = lambda request, update: (grpc.StatusCode.FAILED_PRECONDITION, error)

    @worker.agent("echo")
    async def refused(ctx: TaskContext, report: Reporter) -> None:
        try:
            await report.working()
        except UpdateRefused as err:
            errors.append(err)
            raise

    serving(worker)
    conn = await fake.connection()
    conn.assign("go", task_id="t")
    done = await conn.turn_done()
    assert (done.settled_by_agent, done.error) == (False, "task t cannot move from failed to working")
    assert [(e.kind, e.retryable, e.details["task_id"]) for e in errors] == [("UnsupportedOperation", False, "t")]


async def test_reports_after_a_final_state_fail_locally(fake: FakeSwitchboard, serving) -> None:
    worker = fast_worker(fake.port)
    errors: list[str] = []

    @worker.agent("echo")
    async def twice(ctx: TaskContext, report: Reporter) -> None:
        await report.complete("done")
        try:
            await report.working("more")
        except Exception as err:  # noqa: BLE001
            errors.append(type(err).__name__)

    serving(worker)
    conn = await fake.connection()
    conn.assign("go")
    assert (await conn.turn_done()).settled_by_agent
    assert errors == ["TurnEnded"] and len(fake.updates) == 1
