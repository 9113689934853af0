"""Fault injection for tests: lose a response after the request took effect.

``close`` closes the connection instead of answering (the client sees a
disconnect and retries on a new connection); ``drop`` never answers and keeps
the connection muted, so the client's request times out.  Both happen after
the handler ran, so a Produce is appended: exactly the case idempotent
producers must survive without duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class FaultRule:
    api_key: int
    action: str  # "close" | "drop"
    remaining: int
    fired: int = 0


class FaultInjector:
    ACTIONS = ("close", "drop")

    def __init__(self) -> None:
        self.rules: list[FaultRule] = []

    def lose_response(self, api_key: int, action: str = "close", count: int = 1) -> FaultRule:
        if action not in self.ACTIONS:
            raise ValueError(f"action must be one of {self.ACTIONS}")
        rule = FaultRule(int(api_key), action, count)
        self.rules.append(rule)
        return rule

    def take(self, api_key: int) -> str | None:
        for r in self.rules:
            if r.api_key == api_key and r.remaining > 0:
                r.remaining -= 1
                r.fired += 1
                return r.action
        return None

    def clear(self) -> None:
        self.rules.clear()
