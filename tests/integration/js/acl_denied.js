#!/usr/bin/env node
'use strict'
/*
 * kafkajs as a user the authorizer refuses, for tests/integration/test_acl_clients.py (run against
 * mockbroker and a Kafka 4.4.0, the outputs compared).
 *
 *   node acl_denied.js BOOTSTRAP USER PASSWORD DENIED_TOPIC READABLE_TOPIC GROUP TRANSACTIONAL_ID
 *
 * SASL/PLAIN over plaintext. Produces to DENIED_TOPIC, consumes READABLE_TOPIC in GROUP (the
 * consumer's crash event), and begins a transaction with TRANSACTIONAL_ID; one line per case:
 * "<case>: <Kafka's error type>" (NONE: no error within 15 s; the class name when the error has
 * no type), then "DONE". kafkajs reports a group or transactional id it may not describe as
 * KafkaJSGroupCoordinatorNotFound (FindCoordinator's error), on Kafka as on mockbroker.
 */

const { Kafka, logLevel } = require('kafkajs')

const WAIT_MS = 15000

function type (e) {
  for (let x = e; x; x = x.cause || x.originalError) {
    if (x.type) return x.type
  }
  return e.name
}

async function attempt (label, fn) {
  try {
    await fn()
    console.log(`${label}: NONE`)
  } catch (e) {
    console.log(`${label}: ${type(e)}`)
  }
}

async function main () {
  const [bootstrap, username, password, denied, readable, groupId, transactionalId] = process.argv.slice(2)
  const kafka = new Kafka({ clientId: 'acl-denied', brokers: [bootstrap], logLevel: logLevel.NOTHING,
    sasl: { mechanism: 'plain', username, password }, connectionTimeout: 10000, retry: { retries: 2 } })

  await attempt('produce', async () => {
    const producer = kafka.producer()
    await producer.connect()
    try {
      await producer.send({ topic: denied, acks: -1, messages: [{ value: 'v' }] })
    } finally {
      await producer.disconnect()
    }
  })

  await attempt('consume in a group', async () => {
    const consumer = kafka.consumer({ groupId, retry: { retries: 0 } })
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, WAIT_MS)
        consumer.on(consumer.events.CRASH, ({ payload }) => { clearTimeout(timer); reject(payload.error) })
        consumer.connect()
          .then(() => consumer.subscribe({ topic: readable, fromBeginning: true }))
          .then(() => consumer.run({ eachMessage: async () => {} }))
          .catch((e) => { clearTimeout(timer); reject(e) })
      })
    } finally {
      await consumer.disconnect()
    }
  })

  await attempt('transaction', async () => {
    const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    try {
      const txn = await producer.transaction()
      await txn.abort()
    } finally {
      await producer.disconnect()
    }
  })
  console.log('DONE')
  process.exit(0) // the consumer's timers would keep node alive
}

main().catch((e) => {
  console.log(`error: ${type(e)} ${e.message}`)
  process.exit(1)
})
