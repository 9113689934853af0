#!/usr/bin/env node
'use strict'
/*
 * kafkajs producer for the mockbroker integration test (tests/integration/test_kafkajs.py).
 *
 *   node produce.js BOOTSTRAP TOPIC [SPEC_JSON]    produce the records, print a JSON summary line
 *   node produce.js --codecs                       print {"codecs": [...], "unavailable": {...}}
 *
 * SPEC_JSON (or the environment variable PRODUCE_SPEC) is an object; every key is optional:
 *   acks         0, 1 or -1                      (default -1)
 *   compression  "none" | "gzip" | "snappy" | "lz4" | "zstd"   (default "none")
 *   idempotent   true: idempotent producer (acks must be -1), maxInFlightRequests 1
 *   records      how many records                (default 10000)
 *   partitions   partitions of the topic         (default 3)
 *   chunk        records per producer.send call  (default 1000)
 *
 * Record i (the Python side builds the same bytes, see test_kafkajs.py):
 *   partition  i % partitions
 *   key        "k-<i>"
 *   value      10..300 bytes: length 10 + (i * 7919) % 291, byte j = (i * 31 + j * 7 + (j >> 3)) & 0xff
 *   headers    h => "<i>"
 *
 * The summary line is the only thing written to stdout (kafkajs logs go to stderr). Exit 0 on
 * success, 1 on any error, 2 on bad arguments, 3 when the requested codec is not installed.
 */

const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = require('kafkajs')

// ---- codecs -----------------------------------------------------------------------------------
// gzip is built into kafkajs. The others are plugins; a plugin that is not installed (lz4 is an
// optional dependency with a native build, zstd has no plugin that builds on Node 20) is reported
// as unavailable instead of failing the whole script.
const CODECS = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }
const UNAVAILABLE = {}

function plugin(name, type, load) {
  try {
    CompressionCodecs[type] = load()
    CODECS[name] = type
  } catch (e) {
    UNAVAILABLE[name] = `${e.code || e.name}: ${String(e.message).split('\n')[0]}`
  }
}

plugin('snappy', CompressionTypes.Snappy, () => require('kafkajs-snappy'))
plugin('lz4', CompressionTypes.LZ4, () => {
  const LZ4Codec = require('kafkajs-lz4')
  // kafkajs-lz4 loads the native lz4 binding lazily: make sure it really works here.
  const codec = new LZ4Codec().codec
  require('lz4').decode(require('lz4').encode(Buffer.from('probe')))
  return codec
})
plugin('zstd', CompressionTypes.ZSTD, () => require('@kafkajs/zstd').ZstdCodec())

// ---- records ----------------------------------------------------------------------------------
function recordValue(i) {
  const n = 10 + ((i * 7919) % 291)
  const b = Buffer.allocUnsafe(n)
  for (let j = 0; j < n; j++) b[j] = (i * 31 + j * 7 + (j >> 3)) & 0xff
  return b
}

function message(i, partitions) {
  return { partition: i % partitions, key: `k-${i}`, value: recordValue(i), headers: { h: String(i) } }
}

// ---- logging: everything to stderr, errors counted ---------------------------------------------
const errorLogs = []
const logCreator = () => ({ namespace, level, log }) => {
  const { message: msg, ...extra } = log
  if (level === logLevel.ERROR) errorLogs.push(`${namespace}: ${msg}`)
  process.stderr.write(`[kafkajs ${namespace} ${level}] ${msg} ${JSON.stringify(extra)}\n`)
}

function parseSpec(raw) {
  const spec = Object.assign(
    { acks: -1, compression: 'none', idempotent: false, records: 10000, partitions: 3, chunk: 1000 },
    raw ? JSON.parse(raw) : {}
  )
  if (![0, 1, -1].includes(spec.acks)) throw new Error(`acks must be 0, 1 or -1, not ${spec.acks}`)
  if (spec.idempotent && spec.acks !== -1) throw new Error('an idempotent producer needs acks -1')
  spec.compression = String(spec.compression).toLowerCase()
  return spec
}

async function produce(bootstrap, topic, spec) {
  const started = Date.now()
  const kafka = new Kafka({
    clientId: 'mockbroker-kafkajs-test',
    brokers: bootstrap.split(','),
    logLevel: logLevel.WARN,
    logCreator,
    connectionTimeout: 10000,
    requestTimeout: 30000,
  })

  const admin = kafka.admin()
  await admin.connect()
  let created = false
  // Base offset each partition's next record must get (the log end offset before this run).
  const written = new Array(spec.partitions).fill(0)
  try {
    if (!(await admin.listTopics()).includes(topic)) {
      created = await admin.createTopics({
        topics: [{ topic, numPartitions: spec.partitions, replicationFactor: 1 }],
        waitForLeaders: true,
      })
    }
    const meta = await admin.fetchTopicMetadata({ topics: [topic] })
    const have = meta.topics[0].partitions.length
    if (have !== spec.partitions) throw new Error(`topic ${topic} has ${have} partitions, want ${spec.partitions}`)
    for (const { partition, high } of await admin.fetchTopicOffsets(topic)) written[partition] = Number(high)
  } finally {
    await admin.disconnect()
  }

  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner, // records carry explicit partitions anyway
    idempotent: !!spec.idempotent,
    maxInFlightRequests: spec.idempotent ? 1 : undefined,
    allowAutoTopicCreation: false,
  })
  await producer.connect()

  // For acks != 0 every send returns one base offset per partition: it must equal the partition's
  // log end offset before this run plus the records this run already wrote to it.
  const startOffsets = written.slice()
  const offsetErrors = []
  let sends = 0
  try {
    for (let start = 0; start < spec.records; start += spec.chunk) {
      const messages = []
      for (let i = start; i < Math.min(start + spec.chunk, spec.records); i++) messages.push(message(i, spec.partitions))
      const result = await producer.send({
        topic,
        messages,
        acks: spec.acks,
        compression: CODECS[spec.compression],
      })
      sends++
      const inChunk = new Array(spec.partitions).fill(0)
      for (const m of messages) inChunk[m.partition]++
      if (spec.acks !== 0) {
        const seen = new Set()
        for (const r of result) {
          if (r.topicName !== topic || r.errorCode !== 0) offsetErrors.push({ send: sends, result: r })
          else if (String(r.baseOffset) !== String(written[r.partition]))
            offsetErrors.push({ send: sends, partition: r.partition, baseOffset: r.baseOffset, want: written[r.partition] })
          seen.add(r.partition)
        }
        inChunk.forEach((n, p) => {
          if (n > 0 && !seen.has(p)) offsetErrors.push({ send: sends, partition: p, missing: true })
        })
      }
      inChunk.forEach((n, p) => (written[p] += n))
    }
  } finally {
    await producer.disconnect()
  }

  return {
    ok: offsetErrors.length === 0 && errorLogs.length === 0,
    topic,
    created,
    acks: spec.acks,
    compression: spec.compression,
    idempotent: !!spec.idempotent,
    records: spec.records,
    sends,
    startOffsets,
    endOffsets: written,
    offsetErrors: offsetErrors.slice(0, 10),
    errorLogs: errorLogs.slice(0, 10),
    elapsedMs: Date.now() - started,
  }
}

async function main(argv) {
  if (argv[0] === '--codecs') {
    process.stdout.write(JSON.stringify({ codecs: Object.keys(CODECS), unavailable: UNAVAILABLE }) + '\n')
    return 0
  }
  if (argv.length < 2) {
    process.stderr.write('usage: node produce.js BOOTSTRAP TOPIC [SPEC_JSON] | --codecs\n')
    return 2
  }
  const [bootstrap, topic] = argv
  let spec
  try {
    spec = parseSpec(argv[2] || process.env.PRODUCE_SPEC)
  } catch (e) {
    process.stderr.write(`bad spec: ${e.message}\n`)
    return 2
  }
  if (!(spec.compression in CODECS)) {
    const why = UNAVAILABLE[spec.compression] || 'unknown codec'
    process.stdout.write(JSON.stringify({ ok: false, unavailableCodec: spec.compression, reason: why }) + '\n')
    return 3
  }
  const summary = await produce(bootstrap, topic, spec)
  process.stdout.write(JSON.stringify(summary) + '\n')
  return summary.ok ? 0 : 1
}

main(process.argv.slice(2)).then(
  code => {
    process.exitCode = code
  },
  e => {
    process.stderr.write(`produce.js failed: ${(e && e.stack) || e}\n`)
    process.stdout.write(JSON.stringify({ ok: false, error: String((e && e.message) || e), errorLogs }) + '\n')
    process.exitCode = 1
  }
)
