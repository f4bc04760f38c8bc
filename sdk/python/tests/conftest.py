"""Fixtures: a fake task-state service, and a Worker attached to it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_switchboard import FakeSwitchboard  # noqa: E402

from switchboard_worker import Backoff, Worker  # noqa: E402


@pytest.fixture
async def fake() -> AsyncIterator[FakeSwitchboard]:
    service = FakeSwitchboard()
    await service.start()
    yield service
    await service.stop()


def fast_worker(port: int, **options: object) -> Worker:
    """A Worker with the protocol's timings shortened for tests."""
    settings: dict[str, object] = dict(capacity=4, worker_id="test-worker", heartbeat=0.1,
                                       cancel_grace=0.3, backoff=Backoff(0.05, 0.2))
    settings.update(options)
    return Worker(f"127.0.0.1:{port}", **settings)  # type: ignore[arg-type]


@pytest.fixture
async def serving() -> AsyncIterator[Callable[[Worker], asyncio.Task[None]]]:
    """Starts worker.serve() in the background; stops it after the test."""
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []

    def start(worker: Worker) -> asyncio.Task[None]:
        task = asyncio.create_task(worker.serve(stop))
        tasks.append(task)
        return task

    yield start
    stop.set()
    for task in tasks:
        await asyncio.wait_for(task, 5)
