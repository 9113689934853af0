"""The report's progress line (docs/report.md): what Spark is working on, read from the
SparkContext's status tracker by a daemon thread while the job runs.

On a terminal the line is rewritten in place every ``every`` seconds (default 0.5); otherwise (a CI
log) a new line is printed every ``every`` seconds (default 10).  Spark's own console progress bar is
turned off by ``job.spark_session`` so there is one line, not two.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Self, TextIO

PREFIX = "mockbroker report:"


def describe(stages: list[Any], elapsed_s: float) -> str:
    """The line for the active stages (``SparkStageInfo``: stageId, name, numTasks,
    numCompletedTasks, numActiveTasks)."""
    if not stages:
        return f"{PREFIX} {elapsed_s:.0f} s, between stages"
    total = sum(s.numTasks for s in stages)
    done = sum(s.numCompletedTasks for s in stages)
    running = sum(s.numActiveTasks for s in stages)
    first = min(stages, key=lambda s: s.stageId)
    name = first.name.split(" at ")[0]
    more = f" (+{len(stages) - 1} more)" if len(stages) > 1 else ""
    return (f"{PREFIX} {elapsed_s:.0f} s, stage {first.stageId} {name}{more}: "
            f"{done}/{total} tasks done, {running} running")


class ProgressLine:
    """``with ProgressLine(spark.sparkContext, sys.stderr): ...`` prints the progress meanwhile."""

    def __init__(self, sc: Any, stream: TextIO, every_s: float | None = None) -> None:
        self.sc = sc
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every_s = every_s if every_s is not None else (0.5 if self.tty else 10.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="report-progress", daemon=True)
        self._t0 = time.monotonic()
        self._width = 0

    def __enter__(self) -> Self:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()

    def _stages(self) -> list[Any]:
        tracker = self.sc.statusTracker()
        infos = (tracker.getStageInfo(i) for i in tracker.getActiveStageIds())
        return [s for s in infos if s is not None]

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                line = describe(self._stages(), time.monotonic() - self._t0)
            except Exception:  # noqa: BLE001 - the context is stopping: no more progress to show
                return
            if self.tty:
                self.stream.write("\r" + line.ljust(self._width))
                self._width = max(self._width, len(line))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
