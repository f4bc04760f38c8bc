"""What an agent is to the package: a class with an async `execute`, or an async function.

Both get the same two arguments as the Rust `Agent::execute`: the turn's TaskContext and
its Reporter. Returning ends the turn; raising fails the task with the exception's text
(unless the agent already reported where the task stands).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from switchboard_worker.context import TaskContext
from switchboard_worker.definition import Definition
from switchboard_worker.reporter import Reporter

AgentFunction = Callable[[TaskContext, Reporter], Awaitable[None]]


@runtime_checkable
class Agent(Protocol):
    """An agent class: `execute` runs once per user turn. A class attribute
    `definition` (a Definition) makes the worker announce it."""

    async def execute(self, ctx: TaskContext, report: Reporter) -> None: ...


def as_function(agent: Any) -> AgentFunction:
    """The coroutine function that runs `agent`, or a TypeError saying what is wrong."""
    execute = getattr(agent, "execute", None) if not inspect.isfunction(agent) else None
    target = execute if execute is not None else agent
    if not callable(target) or not inspect.iscoroutinefunction(target):
        raise TypeError(
            f"{agent!r} is not an agent: give an async function (ctx, report) or an object "
            "with an async execute(ctx, report)")
    params = [p for p in inspect.signature(target).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) < 2:
        raise TypeError(f"{agent!r} must take two arguments, (ctx, report)")
    function: AgentFunction = target
    return function


def definition_of(agent: Any) -> Definition | None:
    found = getattr(agent, "definition", None)
    if found is not None and not isinstance(found, Definition):
        raise TypeError(f"{agent!r}.definition must be a Definition, got {type(found).__name__}")
    return found
