"""Reconnection delays: doubling, capped, with jitter.

Many workers losing the same task-state service at once (it restarted) must not all
come back in the same instant, so each delay is drawn from its upper half at random.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays of `first`, doubling up to `cap`, each jittered into [d/2, d]."""

    first: float = 0.2
    cap: float = 5.0
    rng: random.Random = field(default_factory=random.Random, repr=False)
    _next: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        if not 0 < self.first <= self.cap:
            raise ValueError(f"Backoff needs 0 < first <= cap, got first={self.first} cap={self.cap}")
        self._next = self.first

    def next_delay(self) -> float:
        """The pause before the next attempt."""
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay / 2 + self.rng.uniform(0, delay / 2)

    def reset(self) -> None:
        """After a healthy session: the next loss is retried quickly again."""
        self._next = self.first
