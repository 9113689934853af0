"""A quicker start for the report's driver JVM (docs/report.md, "Speed"): an AppCDS archive of the
classes Spark loads.

A JVM maps the classes of a class-data archive instead of reading, verifying and parsing them
from the jars: Spark loads about 12,000 classes before its first result, and with the archive the
report's session and first query start about twice as fast.  The archive belongs to one JDK and one
set of Spark jars; it is made by the first report that finds none (``-XX:ArchiveClassesAtExit``:
the JVM writes the classes it loaded as it exits, a few seconds once) and used by the next ones
(``-XX:SharedArchiveFile``).  It lives in ``$XDG_CACHE_HOME/mockbroker`` (``~/.cache/mockbroker``),
named by a digest of the JDK and the jars, so a new PySpark or JDK makes a new one.  A JVM that
finds the archive unusable runs without it (``-Xshare:auto``, the default); its messages are off.
``MOCKBROKER_REPORT_CDS=0`` turns the archive off.

The archive is written under a temporary name and renamed once the JVM has exited
(``finish_archive``), so a concurrent report never maps half a file.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
from typing import Any

#: The archive this process asked its JVM to write (temporary name, final name), if any.
_pending: tuple[str, str] | None = None
_QUIET = "-Xlog:cds*=off"


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mockbroker")


def _digest() -> str | None:
    """What the archive depends on: the java binary and Spark's jars (names, sizes, times)."""
    try:
        import pyspark
    except ImportError:
        return None
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    java = os.path.realpath(java)
    jars = sorted(glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", "*.jar")))
    h = hashlib.sha256()
    for p in [java, *jars]:
        st = os.stat(p)
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def class_archive_options() -> list[str]:
    """The JVM options that use the archive, or make it when there is none (once per process)."""
    global _pending
    if os.environ.get("MOCKBROKER_REPORT_CDS", "1") == "0":
        return []
    digest = _digest()
    if digest is None:
        return []
    final = os.path.join(cache_dir(), f"spark-classes-{digest}.jsa")
    if os.path.isfile(final):
        return [f"-XX:SharedArchiveFile={final}", _QUIET]
    try:
        os.makedirs(cache_dir(), exist_ok=True)
    except OSError:
        return []
    tmp = f"{final}.{os.getpid()}.tmp"
    _pending = (tmp, final)
    return [f"-XX:ArchiveClassesAtExit={tmp}", _QUIET]


def finish_archive(timeout_s: float = 60.0) -> None:
    """After ``spark.stop()``: when this process's JVM is writing the archive, end the JVM, wait for
    it (at most ``timeout_s``) and give the archive its name; a failed archive is removed."""
    global _pending
    if _pending is None:
        return
    tmp, final = _pending
    _pending = None
    from pyspark import SparkContext
    gateway: Any = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    try:
        if proc is not None:
            gateway.shutdown()
            proc.stdin.close()  # the gateway server exits on EOF of its stdin (PythonGatewayServer)
            proc.wait(timeout_s)
            SparkContext._gateway = None
            SparkContext._jvm = None
        if proc is not None and proc.returncode == 0 and os.path.getsize(tmp) > 0:
            os.replace(tmp, final)
    except (OSError, subprocess.TimeoutExpired):
        pass
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
