"""Reading the on-disk request journal (docs/journal.md): ``read_journal(paths)`` yields its records.

The rules, each in a small function the throttle-conformance report reuses:

* which files (``journal_files``): the paths given, directories expanded to their
  ``journal-*.jsonl`` and ``journal-*.jsonl.gz`` segments, globs expanded; ``*.tmp`` (a
  compression under way) never; a segment present both plain and compressed (the moment between
  the compressor's rename and its delete) once, compressed;
* in which order (``segment_key``): by the broker's start time in the name, then the segment
  number; names that are not a journal segment's after them, by name;
* what a line is (``parse_line``): a JSON object on one line ending in ``\\n`` is a record.  The
  last line of a file without its ``\\n``, or one that does not parse, was cut (the broker was
  killed while writing it, or the writer is writing it now): a ``cut`` warning, and it is skipped.
  A line before the last that does not parse, or is not an object, is ``corrupt``: a warning, and
  reading goes on.  Empty lines are skipped;
* which records (``check_schema``): a ``schema_version`` this reader knows (``SUPPORTED``),
  anything else raises ``JournalSchemaError``: a newer broker's fields cannot be read as these.
"""

from __future__ import annotations

import glob as globmod
import gzip
import json
import os
import re
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

SUPPORTED = frozenset({1})

SEGMENT_RE = re.compile(r"^journal-(\d+)-(\d+)\.jsonl(?:\.gz)?$")
_SUFFIXES = (".jsonl", ".jsonl.gz")


class JournalSchemaError(ValueError):
    """A record of a schema version this reader does not know."""


class JournalWarning(UserWarning):
    """A line or file that cannot be read; the records around it are still read."""

    def __init__(self, path: str, line: int | None, kind: str, detail: str) -> None:
        self.path, self.line, self.kind, self.detail = path, line, kind, detail
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {kind}: {detail}")


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a segment: its number (from 1), its bytes, whether it is the file's last."""
    number: int
    data: bytes
    last: bool


# -- which files, in which order --------------------------------------------------------------
def segment_key(path: str | os.PathLike[str]) -> tuple[int, int, int, str]:
    """Sort key: journal segments by (broker start ms, segment number), other names after them."""
    name = os.path.basename(path)
    m = SEGMENT_RE.match(name)
    if m:
        return 0, int(m.group(1)), int(m.group(2)), name
    return 1, 0, 0, name


def _is_segment_file(name: str) -> bool:
    return name.endswith(_SUFFIXES)


def _expand(item: str | os.PathLike[str]) -> list[str]:
    p = os.fspath(item)
    if os.path.isdir(p):
        return [os.path.join(p, n) for n in os.listdir(p) if n.startswith("journal-") and _is_segment_file(n)]
    if os.path.exists(p):
        return [p]
    if globmod.has_magic(p):
        out = []
        for m in globmod.glob(p):
            out.extend(_expand(m) if os.path.isdir(m) else [m] if _is_segment_file(m) else [])
        return out
    raise FileNotFoundError(f"no journal file or directory {p!r}")


def journal_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The files ``paths`` name (files, directories, globs), deduplicated, in journal order."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    found: dict[str, str] = {}  # the segment's plain name -> the file to read
    for item in items:
        for f in _expand(item):
            plain = os.path.normpath(f.removesuffix(".gz"))
            if plain not in found or f.endswith(".gz"):
                found[plain] = f
    return sorted(found.values(), key=segment_key)


# -- lines -----------------------------------------------------------------------------------
def _open(path: str) -> Any:
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    try:
        return open(path, "rb")
    except FileNotFoundError:  # compressed and deleted since it was listed
        if os.path.exists(path + ".gz"):
            return gzip.open(path + ".gz", "rb")
        raise


def lines(path: str, warn: Callable[[JournalWarning], None]) -> Iterator[Line]:
    """The lines of one segment, the last one marked; a compressed segment that ends early or is
    not gzip is a warning (the lines before that point are still given)."""
    prev: bytes | None = None
    number = 0
    try:
        with _open(path) as f:
            for data in f:
                if prev is not None:
                    yield Line(number, prev, False)
                prev = data
                number += 1
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        if prev is not None:
            yield Line(number, prev, False)
        warn(JournalWarning(path, number + 1 if prev is not None else None, "unreadable",
                            f"compressed segment ends early or is damaged ({e}); lines after {number} lost"))
        return
    if prev is not None:
        yield Line(number, prev, True)


def parse_line(line: Line) -> tuple[str, Any]:
    """``("record", obj)``, ``("empty", None)``, ``("cut", reason)`` (the last line, unfinished) or
    ``("corrupt", reason)`` (a line before the last that is not a JSON object)."""
    data = line.data
    complete = data.endswith(b"\n")
    if not data.strip():
        return ("cut", "a partial line of blanks") if line.last and not complete else ("empty", None)
    if line.last and not complete:
        return "cut", f"no newline at the end of the file ({len(data)} bytes; the broker stopped while writing it)"
    try:
        obj = json.loads(data)
    except ValueError as e:
        reason = f"not JSON ({e}; {len(data)} bytes)"
        return ("cut" if line.last else "corrupt"), reason
    if not isinstance(obj, dict):
        return ("cut" if line.last else "corrupt"), f"a JSON {type(obj).__name__}, not an object"
    return "record", obj


def check_schema(obj: dict[str, Any], path: str, number: int) -> None:
    """Raise ``JournalSchemaError`` unless ``obj`` has a ``schema_version`` this reader knows."""
    version = obj.get("schema_version")
    if version not in SUPPORTED or isinstance(version, bool):
        known = ", ".join(str(v) for v in sorted(SUPPORTED))
        what = "no schema_version" if "schema_version" not in obj else f"schema_version {version!r}"
        raise JournalSchemaError(f"{path}:{number}: {what}; this reader knows schema_version {known} "
                                 f"(docs/journal.md); read it with a newer mockbroker")


def _warn_default(w: JournalWarning) -> None:
    warnings.warn(w, stacklevel=3)


def read_journal(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 warn: Callable[[JournalWarning], None] | None = None) -> Iterator[dict[str, Any]]:
    """Every record of the journal files ``paths`` (files, directories, globs; ``.jsonl`` and
    ``.jsonl.gz``) in order.  Unreadable lines go to ``warn`` (default: ``warnings.warn``) as a
    ``JournalWarning`` naming the file and line; an unknown schema version raises
    ``JournalSchemaError``."""
    report = warn or _warn_default
    for path in journal_files(paths):
        for line in lines(path, report):
            kind, value = parse_line(line)
            if kind == "record":
                check_schema(value, path, line.number)
                yield value
            elif kind != "empty":
                report(JournalWarning(path, line.number, kind, value))


def main(argv: list[str] | None = None) -> int:
    """``python -m mockbroker.journal_reader PATH...``: the records as JSON Lines on stdout, in
    order, checked; warnings on stderr."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog="python -m mockbroker.journal_reader",
                                 description="Print the records of a request journal (docs/journal.md).")
    ap.add_argument("paths", nargs="+", help="journal files, directories or globs")
    args = ap.parse_args(argv)

    def warn(w: JournalWarning) -> None:
        print(f"warning: {w}", file=sys.stderr)

    out = sys.stdout
    try:
        for rec in read_journal(args.paths, warn):
            out.write(json.dumps(rec, separators=(",", ":")) + "\n")
    except (JournalSchemaError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # | head
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
