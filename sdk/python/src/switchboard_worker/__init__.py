"""Switchboard remote workers in Python.

    from switchboard_worker import Worker

    worker = Worker()

    @worker.agent("echo")
    async def echo(ctx, report):
        await report.working("echoing")
        await report.complete(ctx.text)

    worker.main()   # --tasks-url host:port, or $SWITCHBOARD_TASKS_URL

See README.md for the verbs, cancellation, definitions, capacity and reconnection.
"""

from switchboard_worker.a2a import agent_message, data_part, text_of, text_part
from switchboard_worker.agent import Agent
from switchboard_worker.backoff import Backoff
from switchboard_worker.context import TaskContext
from switchboard_worker.definition import Definition, Extension, Provider, Skill
from switchboard_worker.errors import TurnCanceled, TurnEnded, UpdateRefused
from switchboard_worker.reporter import Reporter
from switchboard_worker.worker import Worker, add_arguments, configure

__all__ = [
    "Agent", "Backoff", "Definition", "Extension", "Provider", "Reporter", "Skill", "TaskContext",
    "TurnCanceled", "TurnEnded", "UpdateRefused", "Worker", "add_arguments", "agent_message",
    "configure", "data_part", "text_of", "text_part",
]
