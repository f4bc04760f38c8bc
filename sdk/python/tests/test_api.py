"""The package API refuses bad input with errors that say what to do."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from switchboard_worker import Backoff, Definition, Extension, Provider, Reporter, Skill, TaskContext, Worker
from switchboard_worker.worker import parse_tasks_url

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python-worker" / "shout.json"


async def echo(ctx: TaskContext, report: Reporter) -> None:
    await report.complete(ctx.text)


def test_bad_workers_are_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="capacity must be an integer from 1"):
        Worker("127.0.0.1:1", capacity=0)
    worker = Worker("127.0.0.1:1")
    with pytest.raises(TypeError, match="is not an agent: give an async function"):
        worker.add(lambda ctx, report: None, "echo")
    with pytest.raises(TypeError, match=r"must take two arguments"):
        async def one(ctx: TaskContext) -> None: ...
        worker.add(one, "echo")
    with pytest.raises(ValueError, match="agent name 'no spaces' must be 1 to 64"):
        worker.add(echo, "no spaces")
    with pytest.raises(ValueError, match="say which agent"):
        worker.add(echo)
    worker.add(echo, "echo")
    with pytest.raises(ValueError, match="served twice"):
        worker.add(echo, Definition(name="echo"))


def test_a_class_agent_with_its_definition() -> None:
    class Notes:
        definition = Definition(name="notes", description="Keeps notes")

        async def execute(self, ctx: TaskContext, report: Reporter) -> None:
            await report.complete()

    worker = Worker("127.0.0.1:1")
    worker.add(Notes())
    hello = worker.hello()
    assert list(hello.agents) == ["notes"]
    assert json.loads(hello.definitions[0]) == {"name": "notes", "kind": "worker", "description": "Keeps notes"}


async def test_serving_nothing_or_nowhere_is_refused() -> None:
    with pytest.raises(ValueError, match="serves no agent"):
        await Worker("127.0.0.1:1").serve()
    worker = Worker("")
    worker.add(echo, "echo")
    with pytest.raises(ValueError, match="no task-state service"):
        await worker.serve()


def test_tasks_urls_take_the_rust_workers_forms() -> None:
    assert parse_tasks_url("http://127.0.0.1:1,http://127.0.0.1:2") == [("127.0.0.1:1", False), ("127.0.0.1:2", False)]
    assert parse_tasks_url("tasks:50051") == [("tasks:50051", False)]
    assert parse_tasks_url("https://tasks.example.com:443") == [("tasks.example.com:443", True)]
    with pytest.raises(ValueError, match="is not host:port"):
        parse_tasks_url("http://tasks")


def test_definitions_serialize_as_switchboard_reads_them() -> None:
    definition = Definition(
        name="shout", description="Shouts", version="1.0", provider=Provider("Example Co", "https://example.com"),
        skills=[Skill("shout.text", "Shout", "Upper-cases", tags=["text"], examples=["hi"], output_modes=["text/plain"])],
        extensions=[Extension("https://example.com/ext/cost-v1", params={"per_call": 0})],
        max_queued=10, on_worker_lost="reassign")
    assert definition.to_json() == {
        "name": "shout", "kind": "worker", "description": "Shouts", "version": "1.0",
        "provider": {"organization": "Example Co", "url": "https://example.com"},
        "skills": [{"id": "shout.text", "name": "Shout", "description": "Upper-cases", "tags": ["text"],
                    "examples": ["hi"], "output_modes": ["text/plain"]}],
        "extensions": [{"uri": "https://example.com/ext/cost-v1", "params": {"per_call": 0}}],
        "max_queued": 10, "on_worker_lost": "reassign"}


def test_the_examples_definition_file_reads_back_unchanged() -> None:
    data = json.loads(EXAMPLE.read_text())
    assert Definition.from_json(data).to_json() == data


@pytest.mark.parametrize("bad, message", [
    (dict(name=""), "agent name '' must be"),
    (dict(name="a", skills=[Skill("")]), "every skill needs an id"),
    (dict(name="a", skills=[Skill("x"), Skill("x")]), "skill ids must be unique"),
    (dict(name="a", on_worker_lost="retry"), 'on_worker_lost must be "fail" or "reassign"'),
    (dict(name="a", max_queued=0), "max_queued must be a positive integer"),
    (dict(name="a", documentation_url="docs"), "documentation_url must be an http"),
    (dict(name="a", skills=[Skill("x", tags="text")]), "tags must be a list of non-empty strings"),
    (dict(name="a", extra={"kind": "echo"}), "extra repeats fields"),
])
def test_bad_definitions_name_the_field(bad: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Definition(**bad)


def test_backoff_doubles_to_its_cap_with_jitter_and_resets() -> None:
    backoff = Backoff(0.2, 5.0, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(8)]
    bounds = [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]
    assert all(b / 2 <= d <= b for d, b in zip(delays, bounds, strict=True)), delays
    assert len(set(delays)) == len(delays), "jittered"
    backoff.reset()
    assert 0.1 <= backoff.next_delay() <= 0.2
    with pytest.raises(ValueError, match="0 < first <= cap"):
        Backoff(0, 1)
