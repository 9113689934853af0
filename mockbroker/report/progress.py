"""The report's progress line (docs/report.md): which of the report's own stages runs (job.STAGES),
and the tasks of the Spark jobs it started, read from the SparkContext's status tracker by a daemon
thread while the report runs.

Each stage's Spark jobs run in a job group of their own, described by the stage's name
(``SparkContext.setJobGroup``: the Spark UI and history server show the same names), so the line
names what the report is doing, not Spark's internal call sites.  On a terminal the line is
rewritten in place every ``every`` seconds (default 0.5); otherwise (a CI log) a new line is
printed every ``every`` seconds (default 10).  Spark's own console progress bar is turned off by
``job.spark_session`` so there is one line, not two.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any, Self, TextIO

PREFIX = "mockbroker report:"


def describe(stage: str, number: int, total: int, tasks: tuple[int, int, int] | None, elapsed_s: float) -> str:
    """The line: elapsed time, the report's stage (``number`` of ``total``) and, while Spark runs
    jobs for it, their tasks (total, done, running)."""
    line = f"{PREFIX} {elapsed_s:.0f} s, {number}/{total} {stage}"
    if tasks is not None:
        n, done, running = tasks
        line += f": {done}/{n} tasks done, {running} running"
    return line


class ProgressLine:
    """``with ProgressLine(stream, stages) as p: ...; p.attach(sc); with p.stage("aggregating"): ...``
    prints the progress meanwhile.  ``stages`` are the names of the stages in order."""

    def __init__(self, stream: TextIO, stages: tuple[str, ...], every_s: float | None = None) -> None:
        """``every_s`` 0: no line is printed (the stages are still timed)."""
        self.stream = stream
        self.stages = stages
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every_s = every_s if every_s is not None else (0.5 if self.tty else 10.0)
        self.durations: dict[str, float] = {}  # seconds each stage took, in order
        self.sc: Any = None
        self.current = stages[0]
        self._group: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="report-progress", daemon=True)
        self._t0 = time.monotonic()
        self._width = 0

    def __enter__(self) -> Self:
        self._t0 = self._stage_t0 = time.monotonic()
        if self.every_s:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()

    def attach(self, sc: Any) -> None:
        """The SparkContext, once started, whose jobs are followed (the first stage, starting Spark, ends)."""
        self.sc = sc
        self._lap()

    def _lap(self) -> None:
        now = time.monotonic()
        self.durations[self.current] = self.durations.get(self.current, 0.0) + now - self._stage_t0
        self._stage_t0 = now

    def summary(self) -> str:
        """``12.3 s (starting Spark 3.1 s, ...)``: the elapsed time and each stage's."""
        total = time.monotonic() - self._t0
        return f"{total:.1f} s (" + ", ".join(f"{k} {v:.1f} s" for k, v in self.durations.items()) + ")"

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """The report is in stage ``name``: its Spark jobs (from this thread) are in a job group of that name."""
        self._lap()
        self.current = name
        group = f"mockbroker-report-{self.stages.index(name) + 1 if name in self.stages else 0}"
        sc = self.sc
        if sc is not None:
            sc.setJobGroup(group, f"mockbroker report: {name}")
        self._group = group
        try:
            yield
        finally:
            self._lap()
            if sc is not None:
                sc.setLocalProperty("spark.jobGroup.id", None)
                sc.setLocalProperty("spark.job.description", None)

    def _tasks(self) -> tuple[int, int, int] | None:
        """Tasks of the running jobs of the current stage's group: (total, done, running)."""
        sc, group = self.sc, self._group
        if sc is None or group is None:
            return None
        tracker = sc.statusTracker()
        stages: list[Any] = []
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            if info is None or info.status != "RUNNING":
                continue
            stages.extend(s for s in (tracker.getStageInfo(i) for i in info.stageIds) if s is not None)
        if not stages:
            return None
        return (sum(s.numTasks for s in stages), sum(s.numCompletedTasks for s in stages),
                sum(s.numActiveTasks for s in stages))

    def line(self) -> str:
        name = self.current
        number = self.stages.index(name) + 1 if name in self.stages else 0
        try:
            tasks = self._tasks()
        except Exception:  # noqa: BLE001 - the context is stopping: no tasks to show
            tasks = None
        return describe(name, number, len(self.stages), tasks, time.monotonic() - self._t0)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            line = self.line()
            if self.tty:
                self.stream.write("\r" + line.ljust(self._width))
                self._width = max(self._width, len(line))
            else:
                self.stream.write(line + "\n")
            self.stream.flush()
