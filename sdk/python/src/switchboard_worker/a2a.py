"""The few A2A 1.0 ProtoJSON shapes a worker writes and reads.

Switchboard's internal API carries every A2A object as its ProtoJSON in bytes fields
(lowerCamelCase names, enum names as strings), so a worker needs no A2A model: these
helpers build messages and parts, and read text out of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

JSON = dict[str, Any]

WORKING = "TASK_STATE_WORKING"
COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
REJECTED = "TASK_STATE_REJECTED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

FINAL_STATES = frozenset({COMPLETED, FAILED, CANCELED, REJECTED})
#: States that wait for the client: they end the turn without ending the task.
WAITING_STATES = frozenset({INPUT_REQUIRED, AUTH_REQUIRED})


def text_part(text: str) -> JSON:
    if not isinstance(text, str):
        raise TypeError(f"a text part needs a str, got {type(text).__name__}")
    return {"text": text}


def data_part(data: Any) -> JSON:
    """A structured part (any JSON value)."""
    return {"data": data}


def agent_message(text: str | None = None, parts: Sequence[JSON] | None = None) -> JSON:
    """An agent Message; Switchboard stamps its taskId and contextId."""
    if (text is None) == (parts is None):
        raise ValueError("a message needs text or parts (one of them)")
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_AGENT",
            "parts": [text_part(text)] if text is not None else list(parts or [])}


def text_of(message: Mapping[str, Any]) -> str:
    """The text parts of a message (or artifact), joined with newlines."""
    return "\n".join(p["text"] for p in message.get("parts", []) if isinstance(p.get("text"), str))


def artifact(artifact_id: str, parts: Sequence[JSON], name: str | None = None) -> JSON:
    if not isinstance(artifact_id, str) or not artifact_id:
        raise ValueError("an artifact needs an artifact_id (a non-empty string)")
    if not parts:
        raise ValueError(f"artifact {artifact_id!r} needs at least one part")
    out: JSON = {"artifactId": artifact_id, "parts": list(parts)}
    if name is not None:
        out["name"] = name
    return out
