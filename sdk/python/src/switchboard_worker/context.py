"""What an agent sees of its task for one turn (the Rust `TaskContext`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from switchboard_worker.a2a import JSON, text_of
from switchboard_worker.errors import TurnCanceled


@dataclass
class TaskContext:
    """One turn: the task as it is now, the user message that started the turn, and the
    cancellation signal (set when the task is canceled or otherwise ended by someone
    else, or the worker lost its connection; the agent should return soon after)."""

    #: The A2A Task (ProtoJSON): id, contextId, status, history (every user message and
    #: earlier agent message), artifacts, metadata.
    task: JSON
    #: The A2A Message this turn answers.
    message: JSON
    #: The agent's name (a worker may serve several).
    agent: str
    assignment_id: str = ""
    #: How often this turn was handed out before (a lost worker's turn re-assigned).
    redeliveries: int = 0
    #: W3C trace context of the request that queued the turn ("" when none).
    traceparent: str = ""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def task_id(self) -> str:
        return str(self.task["id"])

    @property
    def context_id(self) -> str:
        return str(self.task.get("contextId", ""))

    @property
    def text(self) -> str:
        """The text of this turn's message."""
        return text_of(self.message)

    def user_messages(self) -> list[JSON]:
        """The user messages of the task, oldest first, this turn's included."""
        history: list[JSON] = [m for m in self.task.get("history", []) if m.get("role") == "ROLE_USER"]
        ids = {m.get("messageId") for m in history}
        if self.message.get("messageId") not in ids:
            history.append(self.message)
        return history

    def user_texts(self) -> list[str]:
        """The text of each user message, oldest first: the first message, then each
        answer the user gave to the agent's questions."""
        return [text_of(m) for m in self.user_messages()]

    @property
    def is_cancelled(self) -> bool:
        return self.cancelled.is_set()

    def raise_if_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise TurnCanceled(f"task {self.task_id} was canceled")

    async def sleep(self, seconds: float) -> None:
        """Waits `seconds`, or raises TurnCanceled as soon as the turn is canceled."""
        try:
            await asyncio.wait_for(self.cancelled.wait(), timeout=seconds)
        except TimeoutError:
            return
        self.raise_if_cancelled()

    def metadata(self) -> dict[str, Any]:
        return dict(self.task.get("metadata") or {})
