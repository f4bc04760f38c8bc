"""The Worker: the agents a process serves, and the loop that keeps it attached.

It announces the agents (and the definitions of its own ones) with their capacity,
runs each Assignment as an asyncio task, and when the connection to the task-state
service is lost (a restart, a network cut) attaches again with backoff and jitter,
rotating over the service's replicas, and serves on: Switchboard re-queues or fails
the turns that were running, so those are stopped, and new ones come on the new stream.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import grpc

from switchboard_worker._stubs import pb
from switchboard_worker.agent import AgentFunction, as_function, definition_of
from switchboard_worker.backoff import Backoff
from switchboard_worker.definition import Definition, check_agent_name
from switchboard_worker.session import Session

log = logging.getLogger("switchboard_worker")

A = TypeVar("A")
#: The largest message accepted from the service (as the Rust worker: 64 MiB).
MAX_MESSAGE = 64 * 1024 * 1024


def parse_tasks_url(url: str) -> list[tuple[str, bool]]:
    """Replica addresses of a task-state service URL: comma-separated `host:port`,
    `http://host:port` or `https://host:port` (TLS). Returns (target, secure) pairs."""
    targets = []
    for item in (u.strip() for u in url.split(",")):
        if not item:
            continue
        secure = item.startswith("https://")
        target = item.removeprefix("https://").removeprefix("http://").rstrip("/")
        host, _, port = target.rpartition(":")
        if not host or not port.isdigit() or "/" in target:
            raise ValueError(f"task-state URL {item!r} is not host:port or http(s)://host:port")
        targets.append((target, secure))
    if not targets:
        raise ValueError("no task-state service: pass tasks_url (or --tasks-url, or set SWITCHBOARD_TASKS_URL)")
    return targets


class Worker:
    """Serves agents to a Switchboard over Workers.Attach.

    tasks_url: the task-state service, as the Rust worker takes it (comma-separated
    replicas; default $SWITCHBOARD_TASKS_URL). capacity: turns run at once, across the
    agents (Switchboard never hands out more). heartbeat, cancel_grace, healthy_after and
    backoff are the protocol's timings; the defaults are the Rust worker's.
    """

    def __init__(self, tasks_url: str | None = None, *, capacity: int = 4, worker_id: str | None = None,
                 heartbeat: float = 3.0, cancel_grace: float = 5.0, update_timeout: float = 30.0,
                 healthy_after: float = 15.0, backoff: Backoff | None = None) -> None:
        self.tasks_url = tasks_url if tasks_url is not None else os.environ.get("SWITCHBOARD_TASKS_URL")
        self.capacity = capacity
        self.worker_id = worker_id or f"python-{socket.gethostname()}-{os.getpid()}"
        if not 0 < heartbeat < 15:
            raise ValueError("heartbeat must be between 0 and 15 s (Switchboard drops a worker silent for 15 s)")
        self.heartbeat, self.cancel_grace = heartbeat, cancel_grace
        self.update_timeout, self.healthy_after = update_timeout, healthy_after
        self.backoff = backoff or Backoff()
        self.agents: dict[str, AgentFunction] = {}
        self.definitions: dict[str, Definition] = {}
        self._validate_capacity()

    def _validate_capacity(self) -> None:
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or not 1 <= self.capacity <= 10_000:
            raise ValueError(f"capacity must be an integer from 1 to 10000, got {self.capacity!r}")

    def add(self, agent: Any, serves: str | Definition | None = None) -> None:
        """Serves `agent` (an async function (ctx, report), or an object with an async
        execute(ctx, report)). `serves` says which agent it is: a name configured on the
        Switchboard, or a Definition of its own to announce (registered unless an
        operator defined that agent); default: the object's `definition` attribute."""
        function = as_function(agent)
        serves = serves if serves is not None else definition_of(agent)
        if serves is None:
            raise ValueError(f"say which agent {agent!r} is: a configured agent's name, or a Definition")
        if isinstance(serves, Definition):
            name = serves.name
        elif isinstance(serves, str):
            name = check_agent_name(serves)
        else:
            raise TypeError(f"serves must be an agent name or a Definition, got {type(serves).__name__}")
        if name in self.agents:
            raise ValueError(f"agent {name!r} is served twice by this worker")
        self.agents[name] = function
        if isinstance(serves, Definition):
            self.definitions[name] = serves

    def agent(self, serves: str | Definition) -> Callable[[A], A]:
        """Decorator form of add(): @worker.agent("echo") or @worker.agent(Definition(...))."""
        def register(agent: A) -> A:
            self.add(agent, serves)
            return agent
        return register

    def hello(self) -> Any:
        """The Hello this worker sends on each attachment."""
        return pb.Hello(worker_id=self.worker_id, agents=sorted(self.agents), capacity=self.capacity,
                        definitions=[d.encoded() for d in self.definitions.values()])

    async def serve(self, stop: asyncio.Event | None = None) -> None:
        """Serves until `stop` is set (forever without one), attaching again whenever
        the connection is lost."""
        if not self.agents:
            raise ValueError("this worker serves no agent: add one first (worker.add or @worker.agent)")
        self._validate_capacity()
        targets = parse_tasks_url(self.tasks_url or "")
        stop = stop or asyncio.Event()
        channels = [_channel(target, secure) for target, secure in targets]
        replica = 0
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                target = targets[replica % len(targets)][0]
                session = Session(channels[replica % len(targets)], self.hello(), self.agents,
                                  heartbeat=self.heartbeat, grace=self.cancel_grace,
                                  update_timeout=self.update_timeout)
                log.info("attaching to %s as %s", target, self.worker_id)
                started = loop.time()
                why = await _until_stopped(session.run(), stop)
                if stop.is_set():
                    break
                if why is None:
                    why = "the service closed the stream"
                replica += 1  # the next attempt tries the next replica
                if session.attached and loop.time() - started >= self.healthy_after:
                    self.backoff.reset()
                delay = self.backoff.next_delay()
                log.warning("worker stream to %s ended (%s); attaching again in %.2fs", target, why, delay)
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                except TimeoutError:
                    pass
        finally:
            for channel in channels:
                await channel.close()

    def run(self) -> None:
        """Serves until SIGTERM or SIGINT (blocking; starts its own event loop)."""
        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            await self.serve(stop)
            log.info("stopped")
        asyncio.run(main())

    def main(self, argv: Sequence[str] | None = None) -> None:
        """run(), after reading the usual options from the command line: --tasks-url,
        --capacity, --worker-id, --log-level."""
        parser = argparse.ArgumentParser(description=f"A Switchboard worker serving {', '.join(sorted(self.agents))}")
        add_arguments(parser, self)
        args = parser.parse_args(argv)
        configure(self, args)
        self.run()


def add_arguments(parser: argparse.ArgumentParser, worker: Worker) -> None:
    """The usual worker options, for a program with a command line of its own."""
    parser.add_argument("--tasks-url", default=worker.tasks_url,
                        help="the task-state service, host:port (comma-separated replicas; "
                             "default $SWITCHBOARD_TASKS_URL)")
    parser.add_argument("--capacity", type=int, default=worker.capacity, help="turns run at once")
    parser.add_argument("--worker-id", default=worker.worker_id, help="unique per worker process")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")


def configure(worker: Worker, args: argparse.Namespace) -> None:
    """Applies the options of add_arguments() to `worker`, and sets up logging."""
    worker.tasks_url, worker.capacity, worker.worker_id = args.tasks_url, args.capacity, args.worker_id
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        worker._validate_capacity()
        parse_tasks_url(worker.tasks_url or "")
    except ValueError as err:
        raise SystemExit(f"error: {err}") from err


def _channel(target: str, secure: bool) -> grpc.aio.Channel:
    # gRPC's own reconnection backoff grows to 2 minutes by default, during which calls on
    # the channel fail at once: kept within ours, so a restarted service is found again
    # within seconds.
    options = [("grpc.max_receive_message_length", MAX_MESSAGE),
               ("grpc.initial_reconnect_backoff_ms", 200), ("grpc.min_reconnect_backoff_ms", 200),
               ("grpc.max_reconnect_backoff_ms", 5000)]
    if secure:
        return grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), options=options)
    return grpc.aio.insecure_channel(target, options=options)


async def _until_stopped(session: Any, stop: asyncio.Event) -> str | None:
    """Runs a session until it ends (None, or why it broke) or `stop` is set."""
    running = asyncio.ensure_future(session)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not running.done():
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
    if running.cancelled():
        return None
    err = running.exception()
    if isinstance(err, grpc.aio.AioRpcError):
        return f"{err.code().name}: {err.details()}"
    if err is not None:
        log.error("worker session failed", exc_info=err)
        return repr(err)
    return None
