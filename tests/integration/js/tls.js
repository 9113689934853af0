#!/usr/bin/env node
'use strict'
/*
 * kafkajs over TLS for tests/integration/test_tls_clients.py.
 *
 *   node tls.js BOOTSTRAP TOPIC CLIENT_ID RECORDS CASE_JSON
 *
 * CASE_JSON: {"ca": path, "cert": path, "key": path, "sasl": {"mechanism": ..., "username": ..., "password": ...}}
 * (cert/key: a client certificate; sasl: SASL_SSL). Produces RECORDS values to partition 0 of TOPIC
 * (acks -1) and prints one JSON line {"offsets": [...]}; an error prints {"error": name, "message": ...}
 * and exits 1.
 */

const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, clientId, records, caseJson] = process.argv.slice(2)
  const c = JSON.parse(caseJson)
  const ssl = { ca: [fs.readFileSync(c.ca)] }
  if (c.cert) {
    ssl.cert = fs.readFileSync(c.cert)
    ssl.key = fs.readFileSync(c.key)
  }
  const kafka = new Kafka({ clientId, brokers: [bootstrap], ssl, sasl: c.sasl, logLevel: logLevel.NOTHING,
    connectionTimeout: 10000, retry: { retries: 2 } })
  const producer = kafka.producer()
  await producer.connect()
  const offsets = []
  try {
    for (let i = 0; i < Number(records); i++) {
      const [meta] = await producer.send({ topic, acks: -1, messages: [{ partition: 0, value: `v${i}` }] })
      offsets.push(Number(meta.baseOffset))
    }
  } finally {
    await producer.disconnect()
  }
  console.log(JSON.stringify({ offsets }))
}

main().catch(e => {
  console.log(JSON.stringify({ error: e.name, message: String(e.message) }))
  process.exit(1)
})
