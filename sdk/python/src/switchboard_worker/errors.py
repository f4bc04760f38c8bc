"""The exceptions the package raises, so an agent can tell them apart."""

from __future__ import annotations

from typing import Any


class TurnCanceled(Exception):
    """The turn is no longer the agent's: its task was canceled (or ended) by someone
    else, or the worker lost its connection. Raised by reports and by `ctx.sleep` once
    that happened; an agent may let it propagate (the turn then ends quietly)."""


class UpdateRefused(Exception):
    """Switchboard refused a report (TaskState.Update): the transition is not allowed,
    the task is gone, or the turn's lease was lost. Carries the A2A error Switchboard
    sent (`kind`, `message`, `retryable`) when it sent one."""

    def __init__(self, message: str, kind: str = "", retryable: bool = False,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.details = details or {}


class TurnEnded(Exception):
    """A report after the agent already reported a final state for this task."""
