"""Bounded polling of broker state from a test thread (never a sleep that hopes)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def until(fn: Callable[[], Any], what: str | Callable[[], str], timeout: float = 10.0, step: float = 0.005) -> Any:
    """Call ``fn`` until it returns something truthy and return that; fail after ``timeout`` s
    (``what`` names what was awaited; a callable is asked then, to show the state it ended in)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
        time.sleep(step)
