"""One turn on the worker: runs the agent for one Assignment and judges how it ended,
the way sb_agent::turn::run_turn does, for the TurnDone the session sends.

Every Assignment is answered by one TurnDone (it frees the turn's capacity slot), unless
the session that got it is gone: then the turn is no longer this worker's (Switchboard
already failed or re-queued it) and is stopped without a word.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from switchboard_worker.agent import AgentFunction
from switchboard_worker.context import TaskContext
from switchboard_worker.errors import TurnCanceled
from switchboard_worker.reporter import Reporter

log = logging.getLogger("switchboard_worker")

#: The TurnDone error Switchboard reads as "did not stop": it must be this exact text
#: (sb_agent::turn::DID_NOT_STOP).
DID_NOT_STOP = "the agent did not stop after cancellation"


@dataclass(frozen=True)
class TurnOutcome:
    """What TurnDone says: whether the agent chose its task's state, else why not."""

    settled_by_agent: bool
    error: str = ""


class Turn:
    """A running turn: its context, and the asyncio task running the agent."""

    def __init__(self, ctx: TaskContext, reporter: Reporter, grace: float) -> None:
        self.ctx, self.reporter, self.grace = ctx, reporter, grace
        self._forced = False  # hard-cancelled after the grace period
        self.lost = False  # the session went away: report nothing
        self._task: asyncio.Task[TurnOutcome] | None = None

    def start(self, agent: AgentFunction) -> asyncio.Task[TurnOutcome]:
        self._task = asyncio.create_task(self._run(agent), name=f"turn {self.ctx.assignment_id}")
        return self._task

    def cancel(self) -> None:
        """Switchboard's Cancel: the task ended by someone else's hand. The agent sees
        ctx.cancelled and should return; after `grace` seconds it is cancelled hard."""
        if self.ctx.cancelled.is_set():
            return
        self.ctx.cancelled.set()
        asyncio.get_running_loop().call_later(self.grace, self._force)

    def lose(self) -> None:
        """The session is gone: stop the agent now; its turn is not ours any more."""
        self.lost = True
        self.ctx.cancelled.set()
        if self._task is not None:
            self._task.cancel()

    def _force(self) -> None:
        if self._task is not None and not self._task.done():
            log.warning("task %s: the agent did not stop %.1fs after cancellation; cancelling it",
                        self.ctx.task_id, self.grace)
            self._forced = True
            self._task.cancel()

    async def _run(self, agent: AgentFunction) -> TurnOutcome:
        try:
            await agent(self.ctx, self.reporter)
        except TurnCanceled:
            pass  # the turn was canceled under it: a quiet end
        except asyncio.CancelledError:
            if self.lost:
                raise
            self._forced = True
        except Exception as exc:  # noqa: BLE001 - whatever the agent raises is its failure
            log.warning("task %s: the agent failed: %r", self.ctx.task_id, exc)
            return TurnOutcome(False, str(exc) or type(exc).__name__)
        if self._forced:
            return TurnOutcome(False, DID_NOT_STOP)
        return TurnOutcome(self.reporter.chose_task_state)
