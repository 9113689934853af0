"""The long-poll completion pass alone: broker CPU per woken Fetch, measured on the broker's thread.

bench/longpoll.py times the wake-up of N parked fetches from outside (the broker process's CPU
from the Produce to the last answer, the client draining N sockets on the same two cores); on a
loaded machine that figure moves by 50 % from run to run.  This one measures the pass itself:
``MockBroker`` in this process (its loop on its own thread), N raw connections from this process,
each with one Fetch v12 parked at the log end (max_wait 30 s, min_bytes 1).  One Produce (acks=1,
one record) wakes them; the completion pass (``ReplicaManager.try_complete_delayed``'s
``with shared_encodings:`` around the fetch purgatory's ``check_and_complete``) is timed with
``time.thread_time`` (CPU of the loop thread only) and ``perf_counter``.  The clients do not read
until the pass is over, so a ``sendmsg`` wakes no reader (the responses wait in the kernel's
buffers); then every response is read and checked (error none, one record), every connection
parks a new Fetch at the new log end, and the next round starts.

Printed per round: pass CPU (ms), CPU per woken fetch (µs), the pass's wall time, and the same
with the ``sendmsg`` calls' own time subtracted (``socket_io.write_frame`` timed inside the pass):
the part in Python, and the cyclic GC's collections that ran inside the pass (``gc.callbacks``)
(``--profile K``: cProfile of the passes, the K functions of most own time).  The median over rounds is the figure to compare (before/after: run this file
from each checkout).

Run: ``.venv/bin/python bench/fanout_pass.py [--conns 5000] [--rounds 5]`` (each connection
takes two file descriptors of this process; N is capped by RLIMIT_NOFILE).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import resource
import socket
import statistics
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from longpoll import TOPIC, fetch_frame, produce_frame, recv_exact  # noqa: E402

from mockbroker import MockBroker
from mockbroker.network import socket_io
from mockbroker.common import shared_encodings  # noqa: E402
from protocol.codec import decode_response  # noqa: E402
from protocol.registry import ApiKey  # noqa: E402

_I32 = struct.Struct(">i")


class PassTimer:
    """Times the completion passes (depth 0 -> 1 -> 0 of ``SharedEncodings``) and the sendmsg calls in them."""

    def __init__(self, profile: cProfile.Profile | None = None) -> None:
        self.profile = profile
        self.passes: list[tuple[float, float, float, int]] = []  # (cpu s, wall s, sendmsg cpu s, frames)
        self.gc_in_pass: list[tuple[int, int, float]] = []  # (generation, objects collected, seconds)
        self._gc_t = 0.0
        self._t: tuple[float, float] | None = None
        self._send_cpu = 0.0
        self._frames = 0

    def install(self) -> None:
        cls = shared_encodings.SharedEncodings
        enter, exit_ = cls.__enter__, cls.__exit__
        timer = self

        def timed_enter(se):  # type: ignore[no-untyped-def]
            if not se._depth:
                timer._t = (time.thread_time(), time.perf_counter())
                timer._send_cpu, timer._frames = 0.0, 0
                if timer.profile is not None:
                    timer.profile.enable()
            return enter(se)

        def timed_exit(se, *exc):  # type: ignore[no-untyped-def]
            exit_(se, *exc)
            if not se._depth and timer._t is not None:
                if timer.profile is not None:
                    timer.profile.disable()
                cpu0, wall0 = timer._t
                timer.passes.append((time.thread_time() - cpu0, time.perf_counter() - wall0, timer._send_cpu,
                                     timer._frames))
                timer._t = None

        write_frame = socket_io.write_frame

        def timed_write(transport, frame):  # type: ignore[no-untyped-def]
            if timer._t is None:
                return write_frame(transport, frame)
            t0 = time.thread_time()
            write_frame(transport, frame)
            timer._send_cpu += time.thread_time() - t0
            timer._frames += 1

        def on_gc(phase, info):  # type: ignore[no-untyped-def]
            if timer._t is None:
                return
            if phase == "start":
                timer._gc_t = time.perf_counter()
            else:
                timer.gc_in_pass.append((info["generation"], info["collected"], time.perf_counter() - timer._gc_t))

        gc.callbacks.append(on_gc)
        cls.__enter__, cls.__exit__ = timed_enter, timed_exit  # type: ignore[method-assign]
        import mockbroker.network.connection as connection
        connection.write_frame = timed_write  # type: ignore[assignment]


def read_frame(sock: socket.socket) -> bytes:
    size = _I32.unpack(recv_exact(sock, 4))[0]
    return recv_exact(sock, size)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conns", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, metavar="K",
                    help="cProfile the passes (loop thread) and print the K functions of most own time")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    n = min(args.conns, (hard - 200) // 2)
    if n < args.conns:
        print(f"NOTE: N reduced from {args.conns} to {n} (RLIMIT_NOFILE {hard}: two descriptors per connection)")
    timer = PassTimer(cProfile.Profile() if args.profile else None)
    timer.install()
    rows = []
    with MockBroker(config={"num.partitions": 1}) as b:
        b.create_topic(TOPIC, 1)
        host, port = b.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conns = []
        for _ in range(n):
            s = socket.create_connection((host, int(port)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conns.append(s)
        producer = socket.create_connection((host, int(port)))
        purgatory = lambda c: c.broker().replica_manager.fetch_purgatory  # noqa: E731
        offset = 0
        for rnd in range(1, args.rounds + 1):
            for s in conns:
                s.sendall(fetch_frame(rnd, offset))
            deadline = time.monotonic() + 60
            while b.call(lambda c: purgatory(c).num_delayed()) < n:
                assert time.monotonic() < deadline, "the fetches did not park"
                time.sleep(0.05)
            before, gc_before = len(timer.passes), len(timer.gc_in_pass)
            producer.sendall(produce_frame(rnd))
            read_frame(producer)
            deadline = time.monotonic() + 20  # a pass of 10,000 takes a second or two
            while len(timer.passes) == before or b.call(lambda c: purgatory(c).num_delayed()):
                assert time.monotonic() < deadline, "the pass did not end"
                time.sleep(0.01)
            cpu, wall, send_cpu, frames = max(timer.passes[before:], key=lambda p: p[3])
            for s in conns:  # every response: error none, the new record
                corr, r = decode_response(ApiKey.FETCH, 12, 1, read_frame(s))
                p = r.responses[0].partitions[0]
                assert corr == rnd and r.error_code == 0 and p.error_code == 0 and p.high_watermark == offset + 1, (
                    corr, r.error_code, p.error_code, p.high_watermark)
            offset += 1
            rows.append((cpu, wall, send_cpu, frames))
            collections = timer.gc_in_pass[gc_before:]
            full = [c for c in collections if c[0] == 2]
            print(f"round {rnd}: {frames} fetches answered in one pass: CPU {cpu * 1e3:.1f} ms "
                  f"({cpu / frames * 1e6:.1f} µs per fetch), wall {wall * 1e3:.1f} ms, "
                  f"sendmsg {send_cpu / frames * 1e6:.1f} µs per fetch, "
                  f"the rest {(cpu - send_cpu) / frames * 1e6:.1f} µs per fetch; cyclic GC in the pass: "
                  f"{len(collections)} collections, {sum(c[2] for c in collections) * 1e3:.0f} ms, of which "
                  f"{len(full)} full ({sum(c[2] for c in full) * 1e3:.0f} ms)", flush=True)
        for s in conns:
            s.close()
        producer.close()
    if timer.profile is not None:
        st = pstats.Stats(timer.profile).sort_stats("tottime")
        st.print_stats(args.profile)
        st.print_callers("get' of 'dict|isinstance")
    per = [r[0] / r[3] * 1e6 for r in rows]
    rest = [(r[0] - r[2]) / r[3] * 1e6 for r in rows]
    print(f"N={n}, {len(rows)} rounds: CPU per woken fetch median {statistics.median(per):.1f} µs "
          f"(min {min(per):.1f}, max {max(per):.1f}); without sendmsg median {statistics.median(rest):.1f} µs "
          f"(min {min(rest):.1f}, max {max(rest):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
