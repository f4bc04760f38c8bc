"""An in-process stand-in for a task-state service: Workers.Attach and TaskState.Update
from the generated stubs, recording what a worker sends and letting a test send
Assignments and Cancels, refuse updates, refuse a Hello or drop the connection."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from switchboard_worker._stubs import pb, pb_grpc

Refusal = tuple[grpc.StatusCode, dict[str, Any]]


@dataclass
class Connection:
    """One attached worker stream."""

    hello: Any
    commands: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    inbox: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)  # messages after Hello
    heartbeats: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    def assign(self, text: str, agent: str = "echo", task_id: str | None = None,
               history: list[dict[str, Any]] | None = None, redeliveries: int = 0) -> str:
        """Sends an Assignment for a turn answering `text`; returns its assignment id."""
        task_id = task_id or str(uuid.uuid4())
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        task = {"id": task_id, "contextId": "ctx-" + task_id, "status": {"state": "TASK_STATE_SUBMITTED"},
                "history": (history or []) + [message]}
        record = {"task": task, "seq": 1, "agent": agent, "owner": "", "created_at": "2026-01-01T00:00:00Z"}
        assignment_id = f"{agent}/{uuid.uuid4().hex}"
        self.commands.put_nowait(pb.WorkerCommand(assignment=pb.Assignment(
            assignment_id=assignment_id, record=pb.TaskRecord(json=json.dumps(record).encode()),
            message_json=json.dumps(message).encode(), redeliveries=redeliveries)))
        return assignment_id

    def cancel(self, assignment_id: str, task_id: str = "") -> None:
        self.commands.put_nowait(pb.WorkerCommand(cancel=pb.Cancel(task_id=task_id, assignment_id=assignment_id)))

    def drop(self) -> None:
        """Ends the stream from the service's side (as a restarting service would)."""
        self.commands.put_nowait(None)

    async def turn_done(self, timeout: float = 5.0) -> Any:
        """The next TurnDone the worker sent."""
        async def next_done() -> Any:
            while True:
                message = await self.inbox.get()
                if message.WhichOneof("kind") == "turn_done":
                    return message.turn_done
        return await asyncio.wait_for(next_done(), timeout)


class FakeSwitchboard(pb_grpc.WorkersServicer, pb_grpc.TaskStateServicer):
    def __init__(self) -> None:
        self.connections: asyncio.Queue[Connection] = asyncio.Queue()
        self.updates: list[tuple[Any, dict[str, Any]]] = []
        self.update_arrived = asyncio.Condition()
        self.refuse_update: Callable[[Any, dict[str, Any]], Refusal | None] = lambda request, update: None
        self.refuse_hello: str | None = None
        self.hellos_refused = 0
        self.server: grpc.aio.Server | None = None
        self.port = 0

    async def start(self, port: int = 0) -> int:
        self.server = grpc.aio.server()
        pb_grpc.add_WorkersServicer_to_server(self, self.server)
        pb_grpc.add_TaskStateServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port(f"127.0.0.1:{port}")
        await self.server.start()
        return self.port

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=None)

    async def connection(self, timeout: float = 5.0) -> Connection:
        return await asyncio.wait_for(self.connections.get(), timeout)

    async def Attach(self, request_iterator: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        first = await request_iterator.__anext__()
        if first.WhichOneof("kind") != "hello":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a worker must send Hello first")
        if self.refuse_hello is not None:
            self.hellos_refused += 1
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, self.refuse_hello)
        await context.send_initial_metadata(())
        connection = Connection(first.hello)
        self.connections.put_nowait(connection)

        async def read() -> None:
            try:
                async for message in request_iterator:
                    if message.WhichOneof("kind") == "heartbeat":
                        connection.heartbeats += 1
                    else:
                        connection.inbox.put_nowait(message)
            finally:
                connection.closed.set()

        reader = asyncio.create_task(read())
        try:
            while (command := await connection.commands.get()) is not None:
                yield command
        finally:
            reader.cancel()
            connection.closed.set()

    async def Update(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        update = json.loads(request.update_json)
        refused = self.refuse_update(request, update)
        if refused is not None:
            code, error = refused
            context.set_trailing_metadata((("grpc-status-details-bin", json.dumps(error).encode()),))
            await context.abort(code, error.get("message", ""))
        async with self.update_arrived:
            self.updates.append((request, update))
            self.update_arrived.notify_all()
        return pb.UpdateTaskResponse()

    async def wait_updates(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Waits until `count` updates arrived; returns all of them (the JSON)."""
        async with self.update_arrived:
            await asyncio.wait_for(self.update_arrived.wait_for(lambda: len(self.updates) >= count), timeout)
            return [u for _, u in self.updates]

    def updates_of(self, task_id: str) -> list[dict[str, Any]]:
        return [u for r, u in self.updates if r.task_id == task_id]
