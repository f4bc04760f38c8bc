"""Reports an agent's progress on one turn: the verbs of the Rust `Reporter`.

Each call is one transition of the task (one TaskState.Update carrying the serde JSON
of sb_tasks::TaskUpdate), stored, streamed to subscribers and pushed to webhooks like an
in-process agent's. A call returns once Switchboard stored it, and raises UpdateRefused
when Switchboard refused it, or TurnCanceled once the turn was canceled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from switchboard_worker import a2a
from switchboard_worker.a2a import JSON
from switchboard_worker.context import TaskContext
from switchboard_worker.errors import TurnEnded

#: Sends one TaskUpdate (as JSON) for the turn; provided by the session.
Send = Callable[[JSON], Awaitable[None]]


class Reporter:
    """The agent's handle on its task for one turn."""

    def __init__(self, ctx: TaskContext, send: Send) -> None:
        self._ctx = ctx
        self._send = send
        self._ended: str | None = None  # the state that ended the turn, if any
        self._kept_open = False
        # Text streamed so far per artifact id, with its name: sent whole on complete().
        self._streamed: dict[str, tuple[str | None, str]] = {}

    @property
    def task_id(self) -> str:
        return self._ctx.task_id

    @property
    def chose_task_state(self) -> bool:
        """Whether the agent said where its task stands after this turn (a final or a
        waiting state, or keep_open()): then the worker reports the turn settled, and
        Switchboard leaves the task as the agent left it."""
        return self._ended is not None or self._kept_open

    async def _update(self, update: JSON) -> None:
        self._ctx.raise_if_cancelled()
        if self._ended in a2a.FINAL_STATES:
            raise TurnEnded(f"task {self.task_id} already ended ({self._ended}); nothing more can be reported")
        await self._send(update)

    async def status(self, state: str, message: JSON | None = None) -> None:
        """Moves the task to `state` (a TASK_STATE_… name) with an optional Message."""
        if not isinstance(state, str) or not state.startswith("TASK_STATE_"):
            raise ValueError(f"state must be a TASK_STATE_… name, got {state!r}")
        await self._update({"Status": {"state": state, "message": message}})
        if state in a2a.FINAL_STATES or state in a2a.WAITING_STATES:
            self._ended = state

    async def working(self, progress: str | None = None) -> None:
        """Working, with an optional progress message (the task's status message)."""
        await self.status(a2a.WORKING, a2a.agent_message(progress) if progress is not None else None)

    async def artifact(self, artifact_id: str, *, text: str | None = None, data: Any = None,
                       parts: Sequence[JSON] | None = None, name: str | None = None,
                       append: bool = False, last_chunk: bool = True) -> None:
        """Adds an artifact chunk (one of `text`, `data` or `parts`): `append=True`
        extends the artifact with the same id, `False` adds or replaces it."""
        given = [p for p in (text, data, parts) if p is not None]
        if len(given) != 1:
            raise ValueError("artifact() takes exactly one of text, data or parts")
        if text is not None:
            parts = [a2a.text_part(text)]
        elif data is not None:
            parts = [a2a.data_part(data)]
        body = a2a.artifact(artifact_id, parts or [], name)
        await self._update({"Artifact": {"artifact": body, "append": append, "last_chunk": last_chunk}})

    async def stream_text(self, artifact_id: str, delta: str, name: str | None = None) -> None:
        """Streams text into an artifact as a delta: only the new text travels. On
        complete() the whole text is sent once more (append false, last chunk), so a
        client that missed deltas still ends with the right result."""
        if not isinstance(delta, str):
            raise TypeError(f"stream_text needs a str delta, got {type(delta).__name__}")
        first = artifact_id not in self._streamed
        await self.artifact(artifact_id, text=delta, name=name, append=not first, last_chunk=False)
        known_name, so_far = self._streamed.get(artifact_id, (name, ""))
        self._streamed[artifact_id] = (known_name, so_far + delta)

    async def input_required(self, question: str) -> None:
        """Asks the user; the task waits in input-required, and the answer starts the
        next turn (whose ctx.user_texts() ends with it)."""
        await self.status(a2a.INPUT_REQUIRED, a2a.agent_message(question))

    async def auth_required(self, explanation: str) -> None:
        """Says what authorization is needed; the task waits in auth-required."""
        await self.status(a2a.AUTH_REQUIRED, a2a.agent_message(explanation))

    async def complete(self, message: str | None = None) -> None:
        """Completes the task, after the authoritative full text of streamed artifacts."""
        streamed, self._streamed = self._streamed, {}
        for artifact_id, (name, text) in streamed.items():
            await self.artifact(artifact_id, text=text, name=name, append=False, last_chunk=True)
        await self.status(a2a.COMPLETED, a2a.agent_message(message) if message is not None else None)

    async def fail(self, reason: str) -> None:
        await self.status(a2a.FAILED, a2a.agent_message(reason))

    async def reject(self, reason: str) -> None:
        await self.status(a2a.REJECTED, a2a.agent_message(reason))

    def keep_open(self) -> None:
        """Ends this turn but leaves the task working: a later message, a cancel or a
        deadline finishes it. Without it, a turn that returns with the task still
        working fails the task, so nothing stays silently stuck."""
        self._kept_open = True
