#!/usr/bin/env node
'use strict'
/*
 * kafkajs steered only over mockbroker's admin HTTP API, for tests/integration/test_control_kafkajs.py.
 *
 *   node control.js SCENARIO BOOTSTRAP ADMIN
 *
 * BOOTSTRAP is the broker's HOST:PORT, ADMIN the admin listener's HOST:PORT.  Everything the
 * scenario does to the broker -- create its topic, add a fault rule, release a held request, set a
 * quota, read the rule's firings, the request journal, the connections, the throttles -- goes
 * over HTTP with Node's own fetch(); kafkajs is the only Kafka client in the process.  Scenarios:
 *
 *   produce-retry  Produce answered NOT_LEADER_OR_FOLLOWER twice: the producer retries, succeeds.
 *   hold-fetch     a group consumer's first Fetch held until POST /faults/release: nothing is
 *                  consumed while it is held, everything once it is released.
 *   disconnect     the connection closed on a Produce before it took effect: the producer
 *                  reconnects and the records are appended once.
 *   quota          producer_byte_rate set with PUT /quotas: the next Produce responses carry
 *                  throttle_time_ms, which kafkajs honours itself (KIP-219: it reads the field as
 *                  clientSideThrottleTime and holds its next requests back; visible as its debug
 *                  log line and as pendingDuration on its request instrumentation events).
 *
 * stdout gets exactly one line, a JSON object: {"scenario": ..., "ok": true, ...what was seen}.
 * kafkajs logs go to stderr.  Exit 0 on success, 1 on any error (the JSON line then has "error"),
 * 2 on bad arguments.  Every wait is bounded (DEADLINE_MS).
 */

const { Kafka, Partitioners, logLevel } = require('kafkajs')

const DEADLINE_MS = 30000 // any one wait; the whole scenario gets twice that
const [scenario, bootstrap, admin] = process.argv.slice(2)

// ---- the admin API ----------------------------------------------------------------------------
async function http (method, path, body) {
  const res = await fetch(`http://${admin}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`)
  return text ? JSON.parse(text) : null
}

const get = path => http('GET', path)
const post = (path, body) => http('POST', path, body)
const journal = (api, clientId) => get(`/journal?api=${api}&client_id=${encodeURIComponent(clientId)}`)

async function until (what, cond, stepMs = 20) {
  const end = Date.now() + DEADLINE_MS
  for (;;) {
    const v = await cond()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out after ${DEADLINE_MS} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, stepMs))
  }
}

// the journal's view of a request, trimmed to what the test looks at
function attempt (r) {
  return {
    connection: r.connection,
    correlation_id: r.correlation_id,
    api_version: r.api_version,
    outcome: r.outcome,
    fault_rule: r.fault_rule,
    errors: r.partitions.map(p => p.error_code),
    bytes: r.partitions.reduce((n, p) => n + p.bytes, 0),
    throttle_time_ms: r.throttle_time_ms,
    arrived_ms: r.arrived_clock_ns / 1e6,
    sent_ms: r.sent_clock_ns === null ? null : r.sent_clock_ns / 1e6,
    handled_ms: r.handled_clock_ns / 1e6,
    received_ms: r.received_clock_ns / 1e6
  }
}

async function createTopic (name, partitions) {
  await post('/topics', { name, partitions, replication_factor: 1 })
}

// ---- kafkajs ------------------------------------------------------------------------------------
const logs = [] // warnings and errors, for the report
const clientThrottles = [] // "Client side throttling in effect for <n>ms" (kafkajs' RequestQueue, debug)

const logCreator = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log
  const m = /Client side throttling in effect for (\d+)ms/.exec(message)
  if (m) clientThrottles.push({ ms: Number(m[1]), at: Date.now() })
  if (level <= logLevel.WARN) {
    logs.push(`${namespace}: ${message}${extra.error ? ` (${extra.error})` : ''}`)
    process.stderr.write(`[kafkajs ${namespace} ${level}] ${message} ${JSON.stringify(extra)}\n`)
  }
}

function kafka (clientId, level = logLevel.WARN) {
  return new Kafka({
    clientId,
    brokers: bootstrap.split(','),
    logLevel: level,
    logCreator,
    retry: { initialRetryTime: 100, retries: 8 }
  })
}

// idempotent, acks=-1; an idempotent kafkajs producer retries without limit (the process has DEADLINE_MS)
function newProducer (client) {
  return client.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { initialRetryTime: 100, retries: Number.MAX_SAFE_INTEGER }
  })
}

const values = (n, from = 0) => Array.from({ length: n }, (_, i) => ({ value: String(from + i) }))

async function logEndOffset (topic, partition = 0) {
  return (await get(`/topics/${topic}/partitions/${partition}`)).log_end_offset
}

// ---- scenarios ----------------------------------------------------------------------------------
async function produceRetry () {
  const topic = 'ctl-produce'
  const clientId = 'kjs-produce'
  await createTopic(topic, 1)
  const rule = await post('/faults', {
    api: 'Produce', client_id: clientId, errors: ['NOT_LEADER_OR_FOLLOWER', 'NOT_LEADER_OR_FOLLOWER']
  })
  const producer = newProducer(kafka(clientId))
  await producer.connect()
  let result
  try {
    result = await producer.send({ topic, acks: -1, messages: values(10) })
  } finally {
    await producer.disconnect()
  }
  return {
    rule: rule.id,
    fired: (await get(`/faults/${rule.id}`)).fired,
    acked: result.map(r => ({ partition: r.partition, baseOffset: Number(r.baseOffset), errorCode: r.errorCode })),
    attempts: (await journal('Produce', clientId)).map(attempt),
    metadata_requests: (await journal('Metadata', clientId)).length,
    log_end_offset: await logEndOffset(topic)
  }
}

async function holdFetch () {
  const topic = 'ctl-hold'
  const clientId = 'kjs-hold'
  await createTopic(topic, 1)
  const seed = newProducer(kafka('kjs-seed'))
  await seed.connect()
  await seed.send({ topic, acks: -1, messages: values(10) })
  await seed.disconnect()

  const rule = await post('/faults', { api: 'Fetch', client_id: clientId, action: 'hold' })
  const seen = []
  const consumer = kafka(clientId).consumer({ groupId: 'kjs-hold-group', maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()) } })
  let out
  try {
    const held = await until('a held Fetch', async () => {
      const h = (await get('/faults/held')).filter(x => x.rule === rule.id)
      return h.length ? h : null
    })
    // the consumer has nothing while its Fetch is held: look again once it has waited 300 ms
    await new Promise(resolve => setTimeout(resolve, 300))
    const stillHeld = (await get('/faults/held')).filter(x => x.rule === rule.id).length
    const conns = await get(`/connections?client_id=${clientId}`)
    const inFlight = conns.map(c => c.in_flight).filter(Boolean)
    const seenWhileHeld = seen.length
    const released = await post('/faults/release', { rule: rule.id })
    await until('every record consumed', () => seen.length >= 10)
    out = {
      rule: rule.id,
      held,
      still_held_after_300ms: stillHeld,
      in_flight_while_held: inFlight,
      seen_while_held: seenWhileHeld,
      released: released.released,
      seen,
      fired: (await get(`/faults/${rule.id}`)).fired,
      fetches: (await journal('Fetch', clientId)).map(attempt)
    }
  } finally {
    await consumer.disconnect()
  }
  return out
}

async function disconnect () {
  const topic = 'ctl-close'
  const clientId = 'kjs-close'
  await createTopic(topic, 1)
  const rule = await post('/faults', { api: 'Produce', client_id: clientId, action: 'close' })
  const producer = newProducer(kafka(clientId))
  await producer.connect()
  let result, connections
  try {
    result = await producer.send({ topic, acks: -1, messages: values(5) })
    connections = (await get(`/connections?client_id=${clientId}`)).map(c => c.id)
  } finally {
    await producer.disconnect()
  }
  return {
    rule: rule.id,
    fired: (await get(`/faults/${rule.id}`)).fired,
    acked: result.map(r => ({ partition: r.partition, baseOffset: Number(r.baseOffset), errorCode: r.errorCode })),
    attempts: (await journal('Produce', clientId)).map(attempt),
    connections_after: connections,
    client_logs: logs.slice(),
    log_end_offset: await logEndOffset(topic)
  }
}

async function quota () {
  const topic = 'ctl-quota'
  const clientId = 'kjs-quota'
  const rate = 10000 // bytes/s
  await createTopic(topic, 1)
  const set = await http('PUT', '/quotas', { client_id: clientId, values: { producer_byte_rate: rate } })
  // debug level for kafkajs' "Client side throttling in effect" line (the logCreator keeps only that)
  const producer = newProducer(kafka(clientId, logLevel.DEBUG))
  const requests = []
  producer.on(producer.events.REQUEST, e => {
    if (e.payload.apiName === 'Produce') {
      requests.push({ pendingDuration: e.payload.pendingDuration, duration: e.payload.duration, sentAt: e.payload.sentAt })
    }
  })
  await producer.connect()
  const big = 'x'.repeat(1000)
  try {
    for (let batch = 0; batch < 3; batch++) { // 8 KB a send, awaited one after another
      await producer.send({ topic, acks: -1, messages: Array.from({ length: 8 }, () => ({ value: big })) })
    }
  } finally {
    await producer.disconnect()
  }
  return {
    quota: set,
    journal: (await journal('Produce', clientId)).map(attempt),
    throttle_events: (await get(`/throttles?client_id=${clientId}`)).map(e => ({
      api_key: e.api_key,
      throttle_ms: e.throttle_ms,
      client_should_throttle: e.client_should_throttle,
      mode: e.mode,
      early_ms: e.early_ms,
      held_while_muted: e.held_while_muted
    })),
    client_throttles_ms: clientThrottles.map(t => t.ms),
    produce_requests: requests,
    log_end_offset: await logEndOffset(topic)
  }
}

const SCENARIOS = { 'produce-retry': produceRetry, 'hold-fetch': holdFetch, disconnect, quota }

async function main () {
  if (!SCENARIOS[scenario] || !bootstrap || !admin) {
    process.stderr.write(`usage: node control.js {${Object.keys(SCENARIOS).join('|')}} BOOTSTRAP ADMIN\n`)
    process.exit(2)
  }
  const timer = setTimeout(() => {
    process.stdout.write(JSON.stringify({ scenario, ok: false, error: `no result after ${2 * DEADLINE_MS} ms` }) + '\n')
    process.exit(1)
  }, 2 * DEADLINE_MS)
  try {
    const result = await SCENARIOS[scenario]()
    process.stdout.write(JSON.stringify({ scenario, ok: true, ...result }) + '\n')
    clearTimeout(timer)
  } catch (e) {
    process.stdout.write(JSON.stringify({ scenario, ok: false, error: String(e && e.stack ? e.stack : e), logs }) + '\n')
    process.exit(1)
  }
}

main()
