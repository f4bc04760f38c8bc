"""An agent's definition: what a worker announces in its Hello so Switchboard registers
the agent and serves its card (the agent describes itself; no server configuration has
to name it).

The fields are those of a TOML `[[agents]]` entry (sb_registry::AgentDefinition), with
`kind = "worker"`. They are checked here, so a mistake is a clear error at startup
rather than a refused Hello (INVALID_ARGUMENT) in a reconnect loop. An operator's
definition of the same agent (configuration or registry API) wins over the worker's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def check_agent_name(name: object) -> str:
    """The name, if Switchboard accepts it: 1 to 64 letters, digits, '-' and '_'."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"agent name {name!r} must be 1 to 64 characters of letters, digits, '-' and '_'")
    return name


def _strings(what: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, str) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ValueError(f"{what} must be a list of non-empty strings, got {values!r}")
    return list(values)


def _web_url(what: str, url: str | None) -> None:
    if url is not None and not re.match(r"^https?://[^\s/]+", url):
        raise ValueError(f"{what} must be an http(s) URL, got {url!r}")


@dataclass(frozen=True)
class Skill:
    """One skill on the card."""

    id: str
    name: str | None = None
    description: str = ""
    tags: Sequence[str] = ()
    examples: Sequence[str] = ()
    input_modes: Sequence[str] = ()
    output_modes: Sequence[str] = ()

    def to_json(self) -> dict[str, Any]:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError("every skill needs an id (a non-empty string)")
        out: dict[str, Any] = {"id": self.id, "description": self.description}
        if self.name is not None:
            out["name"] = self.name
        for key in ("tags", "examples", "input_modes", "output_modes"):
            values = _strings(f"skill {self.id!r}: {key}", getattr(self, key))
            if values:
                out[key] = values
        return out


@dataclass(frozen=True)
class Provider:
    """Who provides the agent."""

    organization: str
    url: str


@dataclass(frozen=True)
class Extension:
    """A card extension the agent declares (its URI, and its parameters if any)."""

    uri: str
    description: str = ""
    required: bool = False
    params: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$", self.uri or ""):
            raise ValueError(f"extension uri must be an absolute URI, got {self.uri!r}")
        out: dict[str, Any] = {"uri": self.uri}
        if self.description:
            out["description"] = self.description
        if self.required:
            out["required"] = True
        if self.params is not None:
            out["params"] = dict(self.params)
        return out


@dataclass(frozen=True)
class Definition:
    """An agent of the worker's own (`kind = "worker"`): its name and card."""

    name: str
    description: str | None = None
    version: str | None = None
    provider: Provider | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    skills: Sequence[Skill] = ()
    default_input_modes: Sequence[str] | None = None
    default_output_modes: Sequence[str] | None = None
    extensions: Sequence[Extension] = ()
    #: Split deployment: turns queued or running at most before new tasks are rejected.
    max_queued: int | None = None
    #: What happens to a turn whose worker is lost: "fail" the task or "reassign" the turn.
    on_worker_lost: Literal["fail", "reassign"] | None = None
    #: Anything else of an `[[agents]]` entry (e.g. "auth", "webhook_secret"), as is.
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.to_json()  # fail at construction, with the field named

    def to_json(self) -> dict[str, Any]:
        """The definition as Switchboard reads it (snake_case, absent = default)."""
        check_agent_name(self.name)
        out: dict[str, Any] = {"name": self.name, "kind": "worker"}
        for key in ("description", "version"):
            value = getattr(self, key)
            if value is not None:
                if not isinstance(value, str) or not value.strip():
                    raise ValueError(f"{key} must be a non-empty string, got {value!r}")
                out[key] = value
        if self.provider is not None:
            if not self.provider.organization.strip():
                raise ValueError("provider.organization must not be empty")
            _web_url("provider.url", self.provider.url)
            out["provider"] = {"organization": self.provider.organization, "url": self.provider.url}
        for key in ("documentation_url", "icon_url"):
            _web_url(key, getattr(self, key))
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if isinstance(self.skills, (str, Skill)):
            raise ValueError("skills must be a list of Skill")
        skills = [s.to_json() for s in self.skills]
        if len({s["id"] for s in skills}) != len(skills):
            raise ValueError(f"skill ids must be unique: {[s['id'] for s in skills]}")
        if skills:
            out["skills"] = skills
        for key in ("default_input_modes", "default_output_modes"):
            if getattr(self, key) is not None:
                out[key] = _strings(key, getattr(self, key))
        if self.extensions:
            out["extensions"] = [e.to_json() for e in self.extensions]
        if self.max_queued is not None:
            if not isinstance(self.max_queued, int) or self.max_queued < 1:
                raise ValueError(f"max_queued must be a positive integer, got {self.max_queued!r}")
            out["max_queued"] = self.max_queued
        if self.on_worker_lost is not None:
            if self.on_worker_lost not in ("fail", "reassign"):
                raise ValueError(f'on_worker_lost must be "fail" or "reassign", got {self.on_worker_lost!r}')
            out["on_worker_lost"] = self.on_worker_lost
        clash = set(self.extra) & (set(out) | {"kind"})
        if clash:
            raise ValueError(f"extra repeats fields of the definition: {sorted(clash)}")
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Definition:
        """A definition from its JSON (e.g. a file with the fields of an [[agents]] entry)."""
        data = dict(data)
        kind = data.pop("kind", "worker")
        if kind != "worker":
            raise ValueError(f'a worker announces agents of kind "worker", not {kind!r}')
        if "name" not in data:
            raise ValueError("a definition needs a name")
        skills = [Skill(**s) for s in data.pop("skills", [])]
        extensions = [Extension(**e) for e in data.pop("extensions", [])]
        provider = data.pop("provider", None)
        known = {k: data.pop(k) for k in list(data) if k in _SIMPLE}
        return cls(skills=skills, extensions=extensions,
                   provider=Provider(**provider) if provider else None, extra=data, **known)

    def encoded(self) -> str:
        """The JSON text carried in Hello.definitions."""
        return json.dumps(self.to_json())


_SIMPLE = {"name", "description", "version", "documentation_url", "icon_url",
           "default_input_modes", "default_output_modes", "max_queued", "on_worker_lost"}
