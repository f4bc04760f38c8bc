"""One Workers.Attach stream: Hello, heartbeats, Assignments in, TurnDones out.

A session ends when the stream breaks or the service closes it; its running turns are
then lost (Switchboard fails or re-queues them) and are stopped here. The Worker opens
the next session.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import grpc

from switchboard_worker._stubs import pb, pb_grpc
from switchboard_worker.a2a import JSON
from switchboard_worker.agent import AgentFunction
from switchboard_worker.context import TaskContext
from switchboard_worker.errors import TurnCanceled, UpdateRefused
from switchboard_worker.reporter import Reporter
from switchboard_worker.turn import Turn, TurnOutcome

log = logging.getLogger("switchboard_worker")


def refusal(err: grpc.aio.AioRpcError) -> UpdateRefused:
    """The A2A error of a failed TaskState call: Switchboard sends it as raw JSON
    ({"kind": …, "message": …}) in the grpc-status-details-bin trailer."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            try:
                details = json.loads(value)
                return UpdateRefused(str(details["message"]), str(details.get("kind", "")),
                                     bool(details.get("retryable", False)), details)
            except (TypeError, ValueError, KeyError):
                break
    return UpdateRefused(f"{err.code().name}: {err.details()}", err.code().name)


class Session:
    """One attachment to a task-state service."""

    def __init__(self, channel: grpc.aio.Channel, hello: Any, agents: Mapping[str, AgentFunction],
                 *, heartbeat: float, grace: float, update_timeout: float) -> None:
        self.workers = pb_grpc.WorkersStub(channel)  # type: ignore[no-untyped-call]
        self.tasks = pb_grpc.TaskStateStub(channel)  # type: ignore[no-untyped-call]
        self.hello, self.agents = hello, agents
        self.heartbeat, self.grace, self.update_timeout = heartbeat, grace, update_timeout
        self.outbox: asyncio.Queue[Any] = asyncio.Queue()
        self.turns: dict[str, Turn] = {}
        self.attached = False  # the service accepted the Hello (answered with headers)

    async def _requests(self) -> AsyncIterator[Any]:
        while (message := await self.outbox.get()) is not None:
            yield message

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            self.outbox.put_nowait(pb.WorkerMessage(heartbeat=pb.Heartbeat()))

    async def run(self) -> None:
        """Serves until the service closes the stream (returns) or it breaks (raises
        grpc.aio.AioRpcError); cancelling it (the worker stops) ends it too. Either way,
        the turns still running are lost and stopped."""
        self.outbox.put_nowait(pb.WorkerMessage(hello=self.hello))
        call = self.workers.Attach(self._requests())
        beat = asyncio.create_task(self._beat())
        try:
            await call.initial_metadata()
            if await _running(call):
                self.attached = True
                log.info("attached as %s (agents %s, capacity %d)", self.hello.worker_id,
                         ",".join(self.hello.agents), self.hello.capacity)
            async for command in call:
                kind = command.WhichOneof("kind")
                if kind == "assignment":
                    self._assign(command.assignment)
                elif kind == "cancel":
                    turn = self.turns.get(command.cancel.assignment_id)
                    if turn is not None:  # else a turn already done: ignored
                        log.info("cancel: task %s", command.cancel.task_id)
                        turn.cancel()
        finally:
            beat.cancel()
            self.outbox.put_nowait(None)
            for turn in list(self.turns.values()):
                turn.lose()
            self.turns.clear()
            call.cancel()

    def _assign(self, assignment: Any) -> None:
        assignment_id = assignment.assignment_id
        try:
            record = json.loads(assignment.record.json)
            message = json.loads(assignment.message_json)
            task, agent_name = record["task"], record["agent"]
            task_id = task["id"]
        except (ValueError, KeyError, TypeError) as err:
            self._done("", assignment_id, TurnOutcome(False, f"cannot read the assignment: {err!r}"))
            return
        log.info("assignment %s: task %s (agent %s, redeliveries %d)", assignment_id, task_id,
                 agent_name, assignment.redeliveries)
        agent = self.agents.get(agent_name)
        if agent is None:
            self._done(task_id, assignment_id,
                       TurnOutcome(False, f"this worker does not run agent {agent_name}"))
            return
        ctx = TaskContext(task=task, message=message, agent=agent_name, assignment_id=assignment_id,
                          redeliveries=assignment.redeliveries, traceparent=assignment.traceparent)
        turn = Turn(ctx, Reporter(ctx, self._sender(ctx)), self.grace)
        self.turns[assignment_id] = turn
        turn.start(agent).add_done_callback(lambda done: self._finished(turn, done))

    def _sender(self, ctx: TaskContext) -> Any:
        async def send(update: JSON) -> None:
            request = pb.UpdateTaskRequest(task_id=ctx.task_id, update_json=json.dumps(update).encode(),
                                           assignment_id=ctx.assignment_id, agent=ctx.agent)
            try:
                await self.tasks.Update(request, timeout=self.update_timeout)
            except grpc.aio.AioRpcError as err:
                if ctx.is_cancelled:
                    raise TurnCanceled(f"task {ctx.task_id} was canceled") from err
                raise refusal(err) from err
        return send

    def _finished(self, turn: Turn, done: asyncio.Task[TurnOutcome]) -> None:
        self.turns.pop(turn.ctx.assignment_id, None)
        if turn.lost or done.cancelled():
            log.info("turn lost with the connection: task %s", turn.ctx.task_id)
            return
        error = done.exception()  # only what _run does not catch (BaseException)
        outcome = done.result() if error is None else TurnOutcome(False, repr(error))
        self._done(turn.ctx.task_id, turn.ctx.assignment_id, outcome)

    def _done(self, task_id: str, assignment_id: str, outcome: TurnOutcome) -> None:
        self.outbox.put_nowait(pb.WorkerMessage(turn_done=pb.TurnDone(
            task_id=task_id, assignment_id=assignment_id,
            settled_by_agent=outcome.settled_by_agent, error=outcome.error)))
        log.info("turn done: task %s settled_by_agent=%s%s", task_id, outcome.settled_by_agent,
                 f" error={outcome.error!r}" if outcome.error else "")


async def _running(call: Any) -> bool:
    """Whether the call is still open after its headers (a refused Hello ends it)."""
    return not call.done()
