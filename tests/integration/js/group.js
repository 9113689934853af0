#!/usr/bin/env node
'use strict'
/*
 * kafkajs consumers in one group, for the mockbroker integration test (tests/integration/test_kafkajs_group.py).
 *
 *   node group.js BOOTSTRAP TOPIC GROUP MEMBERS PARTITIONS RECORDS
 *
 * Starts MEMBERS consumers (kafkajs' default RoundRobinAssigner, autoCommit after each batch), waits
 * until the partitions are split evenly (GROUP_JOIN assignments) and every record "0".."RECORDS-1"
 * was read, prints {"phase":"assigned","sizes":[...],"seen":N}; disconnects the first consumer
 * (LeaveGroup), waits until the others own every partition, prints {"phase":"takeover","sizes":[...]},
 * disconnects the rest and prints {"ok":true}. stdout carries only these lines; exit 1 after 60 s.
 */

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, groupId, membersArg, partitionsArg, recordsArg] = process.argv.slice(2)
const members = Number(membersArg)
const partitions = Number(partitionsArg)
const records = Number(recordsArg)
const kafka = new Kafka({ clientId: 'kafkajs-group', brokers: bootstrap.split(','), logLevel: logLevel.ERROR })
const seen = new Set()
const assignment = []
const deadline = Date.now() + 60000

function balanced (idx) {
  const all = new Set()
  let total = 0
  let min = Infinity
  let max = 0
  for (const i of idx) {
    const a = assignment[i] || []
    a.forEach(p => all.add(p))
    total += a.length
    min = Math.min(min, a.length)
    max = Math.max(max, a.length)
  }
  return all.size === partitions && total === partitions && max - min <= 1
}

async function until (what, cond) {
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timeout ${what}: ${JSON.stringify(assignment)} seen ${seen.size}`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

async function main () {
  const consumers = []
  for (let i = 0; i < members; i++) {
    // short long-polls: a member rejoins only once its in-flight Fetch returns (default maxWaitTimeInMs 5000)
    const c = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000, maxWaitTimeInMs: 100 })
    c.on(c.events.GROUP_JOIN, e => { assignment[i] = (e.payload.memberAssignment[topic] || []).slice().sort() })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async ({ message }) => { seen.add(message.value.toString()) } })
    consumers.push(c)
  }
  const everyone = [...Array(members).keys()]
  await until('assigning', () => seen.size >= records && balanced(everyone))
  console.log(JSON.stringify({ phase: 'assigned', sizes: everyone.map(i => assignment[i].length), seen: seen.size }))
  await consumers[0].disconnect()
  const rest = everyone.slice(1)
  await until('taking over', () => balanced(rest))
  console.log(JSON.stringify({ phase: 'takeover', sizes: rest.map(i => assignment[i].length) }))
  for (const c of consumers.slice(1)) await c.disconnect()
  console.log(JSON.stringify({ ok: true }))
}

main().then(() => process.exit(0), e => { console.error(e); process.exit(1) })
