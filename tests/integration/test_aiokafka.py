"""aiokafka 0.14 against the broker: produce 10,000 records per acks x codec, read back."""

from __future__ import annotations

import asyncio
import time

import pytest

aiokafka = pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

from .records import N_PARTITIONS, N_RECORDS, assert_consumed, assert_stored_codec, record  # noqa: E402

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


async def create_topic(bootstrap, topic):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, N_PARTITIONS, 1)])
    finally:
        await admin.close()


async def produce(bootstrap, topic, acks, codec):
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks, compression_type=codec,
                         enable_idempotence=(acks == "all"), linger_ms=5, max_batch_size=64 * 1024)
    await p.start()
    try:
        futs = []
        for i in range(N_RECORDS):
            k, v, h = record(i)
            futs.append(await p.send(topic, key=k, value=v, headers=h, partition=i % N_PARTITIONS))
        metas = await asyncio.gather(*futs)
    finally:
        await p.stop()
    if acks != 0:
        for part in range(N_PARTITIONS):
            offs = [m.offset for m in metas[part::N_PARTITIONS]]
            assert offs == list(range(len(offs)))


async def consume(bootstrap, topic, deadline_s=60.0):
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    await c.start()
    got: dict[int, list] = {p: [] for p in range(N_PARTITIONS)}
    try:
        c.assign([TopicPartition(topic, p) for p in range(N_PARTITIONS)])
        n = 0
        end = time.monotonic() + deadline_s
        while n < N_RECORDS and time.monotonic() < end:
            for tp, msgs in (await c.getmany(timeout_ms=500)).items():
                for m in msgs:
                    got[tp.partition].append((m.key, m.value, list(m.headers)))
                    n += 1
    finally:
        await c.stop()
    return got


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c or "none")
@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_consume_roundtrip(broker, acks, codec):
    topic = f"ak-{acks}-{codec or 'none'}"
    bs = broker.bootstrap_servers

    async def run():
        await create_topic(bs, topic)
        await produce(bs, topic, acks, codec)
        return await consume(bs, topic)

    got = asyncio.run(run())
    assert_stored_codec(broker, topic, codec)
    assert_consumed(got)
