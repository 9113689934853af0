"""Consumer-group coordinator costs: a join phase, SyncGroup and heartbeats with N members.

    python bench/groups.py [--members 10,100,1000] [--heartbeats 5]

For each N, N raw clients (one connection each, v9 with the MEMBER_ID_REQUIRED round trip) join one
group on a fresh broker with group.initial.rebalance.delay.ms = 100; the figures are
* join phase: from the last JoinGroup sent until every member has its answer (includes the initial
  delay, extended while members arrive: Kafka's InitialDelayedJoin);
* sync: from the leader's SyncGroup (an assignment for every member) until every member has its own;
* heartbeats/s: every member sends --heartbeats Heartbeats, pipelined over all connections, against
  Metadata v12 for no topic (a request of about the same size that touches no group) sent the same
  way on the same connections in the same run, so the ratio is the cost of a heartbeat (a
  DelayedHeartbeat completed and a new one watched in the timing wheel) over that request's; the
  absolute rates include this one-threaded Python client's own encode/decode;
* broker RSS growth per member.
Not part of the tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from mockbroker import MockBroker
from protocol.client import RawKafkaClient
from protocol.registry import ApiKey


def rss_kb() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def join_body(member_id: str) -> dict:
    return {"group_id": "bench", "session_timeout": 60_000, "rebalance_timeout": 60_000, "member_id": member_id,
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"}],
            "reason": None}


def run(n: int, heartbeats: int) -> dict:
    with MockBroker(config={"group.initial.rebalance.delay.ms": 100, "connections.max.idle.ms": 3_600_000}) as b:
        rss0 = rss_kb()
        cs = [RawKafkaClient.connect(b.bootstrap_servers, client_id=f"m{i}", timeout=120) for i in range(n)]
        corr = [c.send(ApiKey.JOIN_GROUP, 9, join_body("")) for c in cs]
        ids = [c.response(ApiKey.JOIN_GROUP, 9, k).member_id for c, k in zip(cs, corr)]
        corr = [c.send(ApiKey.JOIN_GROUP, 9, join_body(mid)) for c, mid in zip(cs, ids)]
        t0 = time.perf_counter()
        joined = [c.response(ApiKey.JOIN_GROUP, 9, k) for c, k in zip(cs, corr)]
        join_s = time.perf_counter() - t0
        gen = joined[0].generation_id
        leader = next(i for i, r in enumerate(joined) if r.leader == r.member_id)
        assert all(r.error_code == 0 and r.generation_id == gen for r in joined)

        def sync_body(i: int, assign: bool) -> dict:
            return {"group_id": "bench", "generation_id": gen, "member_id": ids[i], "group_instance_id": None,
                    "protocol_type": "consumer", "protocol_name": "range",
                    "assignments": [{"member_id": m, "assignment": b"x" * 16} for m in ids] if assign else []}

        corr = [c.send(ApiKey.SYNC_GROUP, 5, sync_body(i, False)) for i, c in enumerate(cs) if i != leader]
        t0 = time.perf_counter()
        lc = cs[leader].send(ApiKey.SYNC_GROUP, 5, sync_body(leader, True))
        synced = [c.response(ApiKey.SYNC_GROUP, 5, k) for c, k in zip([c for i, c in enumerate(cs) if i != leader], corr)]
        synced.append(cs[leader].response(ApiKey.SYNC_GROUP, 5, lc))
        sync_s = time.perf_counter() - t0
        assert all(r.error_code == 0 for r in synced)
        rss_members = rss_kb() - rss0

        def pipelined(api: int, version: int, body_of) -> float:
            t = time.perf_counter()
            for _ in range(heartbeats):
                ks = [c.send(api, version, body_of(i)) for i, c in enumerate(cs)]
                for c, k in zip(cs, ks):
                    r = c.response(api, version, k)
                    assert getattr(r, "error_code", 0) == 0
            return n * heartbeats / (time.perf_counter() - t)

        av = pipelined(ApiKey.METADATA, 12, lambda i: {"topics": [], "allow_auto_topic_creation": False,
                                                       "include_topic_authorized_operations": False})
        hb = pipelined(ApiKey.HEARTBEAT, 4, lambda i: {"group_id": "bench", "generation_id": gen, "member_id": ids[i],
                                                       "group_instance_id": None})
        gauges = b.group_purgatory_gauges()
        for c in cs:
            c.close()
        return {"members": n, "join_ms": join_s * 1000, "sync_ms": sync_s * 1000, "hb_per_s": hb,
                "metadata_per_s": av, "rss_kb_per_member": rss_members / n, "heartbeat_gauges": gauges["Heartbeat"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", default="10,100,1000")
    ap.add_argument("--heartbeats", type=int, default=5)
    args = ap.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
    print(f"{'members':>8} {'join phase':>11} {'sync':>9} {'heartbeats/s':>13} {'Metadata/s':>14} "
          f"{'hb/Metadata':>11} {'RSS/member':>11}  Heartbeat purgatory")
    for n in (int(x) for x in args.members.split(",")):
        r = run(n, args.heartbeats)
        print(f"{r['members']:>8} {r['join_ms']:>9.1f}ms {r['sync_ms']:>7.1f}ms {r['hb_per_s']:>13,.0f} "
              f"{r['metadata_per_s']:>14,.0f} {r['metadata_per_s'] / r['hb_per_s']:>10.2f}x "
              f"{r['rss_kb_per_member']:>8.1f} KB  {r['heartbeat_gauges']}")


if __name__ == "__main__":
    main()
