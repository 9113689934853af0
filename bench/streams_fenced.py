"""How often a fenced Kafka Streams 4.4 member's stream thread dies with ``IllegalStateException:
Consumer is not subscribed to any topics or assigned any partitions``, on mockbroker and on Apache
Kafka 4.4.0, the same way on both (issue 26).

Two instances of a word count (group.protocol=streams, exactly_once_v2, one stream thread each,
records flowing) reach the broker through a TCP proxy on 127.0.0.1 (``StallProxy``; the broker
advertises the proxy's address, so every connection goes through it). The proxy tells instance B's
connections by the client id of their first request (``fenB-...``). Once both instances own tasks,
the driver (bench/java/StreamsFenced.java) asks for a stall: the proxy holds all of B's traffic,
both ways, for ``--stall-ms`` (longer than the group's 2 s session timeout), so B stops heartbeating
without closing; the broker expires its session, fences it and gives its tasks to A; then B's
traffic flows again and B learns it was fenced. ``--modes`` may add ``expel`` (mockbroker only):
``DELETE /groups/{group}/members/{B's member}`` instead of the stall, as docs/streams.md's JUnit
example does. ``stall-heartbeat`` holds only B's main consumer's connection to the group
coordinator (``fenB-StreamThread-1-consumer``, the connection that carries its StreamsGroupHeartbeats)
while its fetches and its producer's transactions go on, and lets it go once the broker has answered
one of B's commits (TxnOffsetCommit) UNKNOWN_MEMBER_ID, a random 0 to ``--release-jitter-ms`` later
(default 500, the heartbeat interval; 0: at once; or after ``--stall-ms``): the member
learns of the fence from a commit first and from its heartbeat a moment later, as after the expel, which
Kafka has no API for (no admin call removes a streams group member in 4.4).

Both brokers get the same group settings: no initial rebalance delay, a 500 ms streams heartbeat
interval and a 2 s streams session timeout (Kafka needs its floors,
``group.streams.min.heartbeat.interval.ms`` and ``group.streams.min.session.timeout.ms``, lowered).
Every stream-thread death is caught by an uncaught-exception handler answering REPLACE_THREAD and
printed with its top frames; the table counts per broker and mode the runs whose fenced instance's
thread died with that exception. Out of CI (a rate, not a check).

  python bench/streams_fenced.py [--runs 10] [--brokers mockbroker,kafka] [--modes stall,stall-heartbeat,expel]
      [--release-jitter-ms 500]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from brokers import RealKafka, Unavailable, free_port, kafka_classpath, serve_mockbroker, tail  # bench/brokers.py

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "java" / "StreamsFenced.java"
CLIENT_CP = ROOT / "tests" / "integration" / "java" / "cp.txt"  # kafka-streams 4.4.0 (toolchain_maven)
GROUP_CONFIG = {"group.initial.rebalance.delay.ms": "0", "group.streams.initial.rebalance.delay.ms": "0",
                "group.streams.heartbeat.interval.ms": "500", "group.streams.session.timeout.ms": "2000"}
KAFKA_ONLY = {"group.streams.min.heartbeat.interval.ms": "500", "group.streams.min.session.timeout.ms": "1000"}
MESSAGE = "Consumer is not subscribed to any topics"
# the client ids whose connections a mode stalls (StreamsFenced names instance B's clients fenB-...)
TAGS = {"stall": "fenB", "stall-heartbeat": "fenB-StreamThread-1-consumer", "expel": "fenB"}
WATCH = {"stall-heartbeat": "fenB-StreamThread-1-producer"}
ONLY_API = {"stall-heartbeat": 88}  # StreamsGroupHeartbeat: the consumer's coordinator connection


class StallProxy:
    """A TCP proxy on 127.0.0.1 in front of one broker port. A connection whose first request's
    client id starts with ``tag`` is stalled (nothing forwarded either way) while ``stall(ms)`` is in
    effect; every other connection flows through untouched (and, with ``release_on_fenced_commit``, is
    watched for a commit answered UNKNOWN_MEMBER_ID, which ends the stall)."""

    def __init__(self, target_port: int, tag: str, port: int = 0, release_on_fenced_commit: str = "",
                 only_api: int | None = None) -> None:
        self.target_port = target_port
        self.tag = tag.encode()
        self.only_api = only_api  # stall only a tagged connection that carried a request of this api
        self.release_jitter_s = 0.0
        # a connection whose client id starts with this: its TxnOffsetCommit (28) answered
        # UNKNOWN_MEMBER_ID (25) ends the stall
        self.watch = release_on_fenced_commit.encode()
        self.released_on_commit = 0
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.stalled_until = 0.0
        self.stalls = 0
        self.tagged = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self, ms: int) -> None:
        self.stalled_until = time.monotonic() + ms / 1000.0
        self.stalls += 1

    def close(self) -> None:
        self.closed = True
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            conn: dict = {"tagged": None, "watched": False, "pending": set()}
            threading.Thread(target=self._pump, args=(client, upstream, conn, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, conn, False), daemon=True).start()

    def _watch(self, conn: dict, buf: bytes, from_client: bool) -> bytes:
        """Split ``buf`` into frames: note TxnOffsetCommit requests' correlation ids; a response to one
        with a partition's error code 25 (int32 partition index, int16 error) ends the stall. The rest
        (a partial frame) is returned."""
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
            size = struct.unpack(">i", buf[:4])[0]
            frame, buf = buf[4:4 + size], buf[4 + size:]
            if from_client and conn.get("candidate") and struct.unpack(">h", frame[:2])[0] == self.only_api:
                conn["tagged"] = True
            elif from_client and struct.unpack(">h", frame[:2])[0] == 28:
                conn["pending"].add(frame[4:8])
            elif not from_client and frame[:4] in conn["pending"]:
                conn["pending"].discard(frame[:4])
                if re.search(rb"\x00\x00\x00[\x00-\x0f]\x00\x19", frame[4:]) and time.monotonic() < self.stalled_until:
                    # its heartbeat goes a random part of a heartbeat interval later, as after an expel
                    self.stalled_until = time.monotonic() + random.uniform(0, self.release_jitter_s)
                    self.released_on_commit += 1
        return buf

    def _hold(self, conn: dict) -> None:
        while conn["tagged"] and time.monotonic() < self.stalled_until:
            time.sleep(0.01)

    def _pump(self, src: socket.socket, dst: socket.socket, conn: dict, from_client: bool) -> None:
        head = b""  # the first request until its client id is read; then a watched connection's partial frame
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if from_client and conn["tagged"] is None:
                    head += data
                    # request frame: size int32, api_key int16, api_version int16, correlation_id int32,
                    # client_id int16-length string (RequestHeader v1 and v2 alike)
                    if len(head) < 14:
                        continue
                    (n,) = struct.unpack(">h", head[12:14])
                    if len(head) < 14 + max(n, 0):
                        continue
                    conn["tagged"] = n > 0 and head[14:14 + n].startswith(self.tag)
                    conn["watched"] = bool(self.watch) and n > 0 and head[14:14 + n].startswith(self.watch)
                    if conn["tagged"] and self.only_api is not None:
                        conn["tagged"], conn["watched"] = False, True
                        conn["candidate"] = True
                    self.tagged += bool(conn["tagged"])
                    data, head = head, b""
                if conn["watched"]:
                    head = self._watch(conn, head + data, from_client)
                self._hold(conn)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()


def compile_driver(out: Path) -> str:
    if not CLIENT_CP.is_file():
        raise Unavailable(f"{CLIENT_CP} missing: bash -c 'source scripts/toolchains.sh; toolchain_maven'")
    cp = CLIENT_CP.read_text().strip()
    r = subprocess.run(["javac", "-cp", cp, "-d", str(out), str(SOURCE)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"javac failed:\n{r.stdout}\n{r.stderr}")
    return f"{cp}:{out}"


def drive(cp: str, proxy: StallProxy, mode: str, args: argparse.Namespace, admin: str = "") -> list[dict]:
    """Run the driver's ``args.runs`` runs in one JVM against ``proxy``: its results."""
    proxy.release_jitter_s = args.release_jitter_ms / 1000.0
    with tempfile.TemporaryDirectory(prefix="streams-fenced-") as state:
        proc = subprocess.Popen(
            ["java", "-Xmx512m", "-cp", cp, "StreamsFenced", f"127.0.0.1:{proxy.port}", mode, str(args.runs),
             str(args.stall_ms), str(args.observe_ms), state, admin],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        err: list[str] = []

        def read_err() -> None:
            for line in proc.stderr or []:
                if line.startswith("STALL "):
                    proxy.stall(int(line.split()[1]))
                else:
                    err.append(line)

        reader = threading.Thread(target=read_err, daemon=True)
        reader.start()
        results = []
        deadline = time.monotonic() + args.runs * 90
        for line in proc.stdout or []:
            if line.startswith("RESULT "):
                res = json.loads(line.split(" ", 1)[1])
                results.append(res)
                print(f"  {mode} run {res['run']}: {summary(res)}", flush=True)
            if time.monotonic() > deadline:
                break
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        reader.join(5)
        if len(results) < args.runs:
            print(f"  {mode}: {len(results)} of {args.runs} runs (exit {proc.returncode}):\n{tail(''.join(err))}")
        if proxy.watch:
            print(f"  {mode}: {proxy.released_on_commit} of {proxy.stalls} stalls ended by a commit answered "
                  "UNKNOWN_MEMBER_ID", flush=True)
        return results


def died_unsubscribed(res: dict) -> bool:
    return any(d["instance"] == "B" and MESSAGE in d["message"] for d in res["deaths"])


def summary(res: dict) -> str:
    deaths = "; ".join(f"{d['instance']} {d['exception'].rsplit('.', 1)[-1]}: {d['message'][:60]} "
                       f"({' < '.join(d['frames'][:2])})" for d in res["deaths"]) or "no thread died"
    return (f"A took all tasks: {res.get('a_took_all_tasks')}, B states {res.get('b_states_after')}, "
            f"active A/B at end {res.get('a_active')}/{res.get('b_active')}; {deaths}")


def on_mockbroker(cp: str, mode: str, args: argparse.Namespace) -> list[dict]:
    port = free_port()
    proxy = StallProxy(port, TAGS[mode], release_on_fenced_commit=WATCH.get(mode, ""),
                       only_api=ONLY_API.get(mode))
    config = [f"{k}={v}" for k, v in GROUP_CONFIG.items()]
    config += [f"advertised.listeners=PLAINTEXT://127.0.0.1:{proxy.port}", "mock.admin.listener=127.0.0.1:0"]
    try:
        with serve_mockbroker(config, port=port) as (_proc, ready):  # "H:P admin=H:P", H:P the proxy's
            return drive(cp, proxy, mode, args, "http://" + ready.split("admin=", 1)[1].strip())
    finally:
        proxy.close()


def on_kafka(cp: str, mode: str, args: argparse.Namespace, kafka_cp: str) -> list[dict]:
    kafka = RealKafka(kafka_cp, extra_props={**GROUP_CONFIG, **KAFKA_ONLY})
    proxy = StallProxy(kafka.port, TAGS[mode], release_on_fenced_commit=WATCH.get(mode, ""),
                       only_api=ONLY_API.get(mode))
    kafka.extra_props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{proxy.port}"
    try:
        kafka.start()
        return drive(cp, proxy, mode, args)
    finally:
        kafka.stop()
        proxy.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--brokers", default="mockbroker,kafka")
    ap.add_argument("--modes", default="stall,stall-heartbeat,expel",
                    help="stall, stall-heartbeat (both brokers), expel (mockbroker only)")
    ap.add_argument("--stall-ms", type=int, default=5000)
    ap.add_argument("--release-jitter-ms", type=int, default=500,
                    help="stall-heartbeat: the heartbeat goes up to this long after the refused commit")
    ap.add_argument("--observe-ms", type=int, default=6000, help="how long to watch after the stall ends")
    args = ap.parse_args(argv)
    counts: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory(prefix="streams-fenced-classes-") as classes:
        cp = compile_driver(Path(classes))
        for broker in args.brokers.split(","):
            for mode in args.modes.split(","):
                if broker == "kafka" and mode == "expel":
                    continue
                print(f"{broker} {mode}:", flush=True)
                try:
                    res = on_kafka(cp, mode, args, kafka_classpath()) if broker == "kafka" else on_mockbroker(cp, mode, args)
                except Unavailable as e:
                    print(f"  unavailable: {e}")
                    continue
                counts[f"{broker} {mode}"] = (sum(map(died_unsubscribed, res)), len(res))
    print(f"\nfenced instance's stream thread died with '{MESSAGE} ...' (runs):")
    for key, (died, n) in counts.items():
        print(f"  {key:18} {died} of {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
