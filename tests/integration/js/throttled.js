#!/usr/bin/env node
'use strict'
/*
 * A kafkajs producer under a client quota, for tests/integration/test_throttle_clients.py (the
 * verdict on whether it waits out its throttles).
 *
 *   node throttled.js BOOTSTRAP TOPIC CLIENT_ID RECORDS VALUE_BYTES
 *
 * Sends RECORDS values of VALUE_BYTES to partition 0, one producer.send at a time (acks 1), so one
 * Produce is in flight.  kafkajs honours KIP-219 itself: a response version past the KIP-219 bump
 * carries clientSideThrottleTime, and requestQueue.maybeThrottle holds the socket's next requests
 * until it has passed.  stdout gets one JSON line {"ok": true, "records": N, "throttled_ms": [...]};
 * exit 1 on any error.
 */

const { Kafka, Partitioners, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, clientId, records, size] = process.argv.slice(2)
  const kafka = new Kafka({ clientId, brokers: bootstrap.split(','), logLevel: logLevel.WARN, requestTimeout: 30000 })
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, allowAutoTopicCreation: false })
  const throttled = []
  // the producer's request instrumentation: how long each request waited in the queue (the throttle)
  producer.on(producer.events.REQUEST, e => {
    if (e.payload.apiName === 'Produce' && e.payload.pendingDuration > 0) throttled.push(e.payload.pendingDuration)
  })
  await producer.connect()
  const value = Buffer.alloc(Number(size), 120)
  for (let i = 0; i < Number(records); i++) {
    await producer.send({ topic, acks: 1, messages: [{ partition: 0, value }] })
  }
  await producer.disconnect()
  process.stdout.write(JSON.stringify({ ok: true, records: Number(records), throttled_ms: throttled }) + '\n')
}

const timer = setTimeout(() => { process.stderr.write('timed out after 60 s\n'); process.exit(1) }, 60000)
main().then(() => { clearTimeout(timer) }, e => {
  process.stdout.write(JSON.stringify({ ok: false, error: String(e && e.stack || e) }) + '\n')
  process.exit(1)
})
