// Open-loop load at a fixed offered rate (as wrk2 does): requests go out on a
// schedule whether or not earlier ones were answered, over raw keep-alive
// HTTP/1.1 connections, so a slow answer cannot slow the offered load down
// and hide itself. One request at a time per connection (Bun's server drops a
// connection that pipelines requests to an async handler); a request due while
// every connection is busy waits for the first free one, and is counted.
// Latency is taken from the moment a request is written to the moment its
// whole response has arrived; the latency from the moment it was due is kept
// too (it adds that wait, and the generator's own timer lag, about 1 ms).
// autocannon's overallRate is not used: it sends each second's quota as a
// burst at the start of the second.
import type { Socket } from 'bun'
import type { RequestSpec } from './load.ts'
import { Samples, type Summary } from './stats.ts'

export interface OpenLoopSettings {
  /** Requests a second, offered evenly. */
  ratePerSec: number
  durationSec: number
  /** Connections the requests are spread over; a request waits for none if one is idle. */
  connections: number
}

export interface OpenLoopResult {
  offeredPerSec: number
  /** Complete responses a second over the sending period. */
  answeredPerSec: number
  sent: number
  answered: number
  non2xx: number
  /** Requests never answered (closed connection, or no answer 5 s after the last send). */
  errors: number
  /** Requests that found every connection busy when due, and waited for one. */
  waitedForConnection: number
  /** From write to the whole response. */
  latency: Summary
  /** From the moment the request was due (includes the generator's lag). */
  sinceDue: Summary
  /** This process's CPU over the run's wall time (the generator runs here): 1 = a whole core. */
  generatorCores: number
}

interface Pending {
  due: number
  written: number
}

interface Connection {
  socket: Socket<undefined> | undefined
  /** The request in flight. */
  pending: Pending | undefined
  buffer: Buffer
}

const HEADER_END = Buffer.from('\r\n\r\n')
const DRAIN_MS = 5_000

function requestBytes(url: URL, spec: RequestSpec): Buffer {
  const body = spec.body ?? ''
  const headers = Object.entries(spec.headers ?? {})
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
  return Buffer.from(
    `${spec.method} ${spec.path} HTTP/1.1\r\nHost: ${url.host}\r\n${headers}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  )
}

/** Takes complete responses off the front of the connection's buffer; onResponse(status) for each. */
function parseResponses(connection: Connection, onResponse: (status: number) => void) {
  for (;;) {
    const end = connection.buffer.indexOf(HEADER_END)
    if (end < 0) return
    const head = connection.buffer.subarray(0, end).toString('latin1')
    const status = Number(head.slice(9, 12))
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0)
    const total = end + HEADER_END.length + length
    if (connection.buffer.length < total) return
    connection.buffer = connection.buffer.subarray(total)
    onResponse(status)
  }
}

export async function runOpenLoop(
  baseUrl: string,
  spec: RequestSpec,
  settings: OpenLoopSettings,
): Promise<OpenLoopResult> {
  const url = new URL(baseUrl)
  const request = requestBytes(url, spec)
  const latency = new Samples()
  const sinceDue = new Samples()
  let non2xx = 0
  let lost = 0
  let answered = 0
  let sent = 0
  let waited = 0
  let stopped = false
  let allAnswered: () => void = () => {}
  /** Due times of requests waiting for a free connection. */
  const waiting: number[] = []
  const idle: Connection[] = []
  const connections: Connection[] = []

  const write = (connection: Connection, due: number) => {
    connection.pending = { due, written: performance.now() }
    connection.socket?.write(request)
  }
  const settle = () => {
    if (stopped && waiting.length === 0 && answered + lost === sent) allAnswered()
  }

  for (let index = 0; index < settings.connections; index++) {
    const connection: Connection = {
      socket: undefined,
      pending: undefined,
      buffer: Buffer.alloc(0),
    }
    connection.socket = await Bun.connect({
      hostname: url.hostname,
      port: Number(url.port),
      socket: {
        data(_socket, chunk) {
          // A copy: Bun reuses the memory of chunk for the next read.
          connection.buffer = Buffer.concat([connection.buffer, chunk])
          parseResponses(connection, (status) => {
            const now = performance.now()
            const done = connection.pending
            if (!done) return
            connection.pending = undefined
            answered++
            latency.add(now - done.written)
            sinceDue.add(now - done.due)
            if (status < 200 || status > 299) non2xx++
            const next = waiting.shift()
            if (next !== undefined) write(connection, next)
            else idle.push(connection)
            settle()
          })
        },
        close() {
          if (connection.pending) lost++
          connection.pending = undefined
          connection.socket = undefined
          const at = idle.indexOf(connection)
          if (at >= 0) idle.splice(at, 1)
          settle()
        },
        error() {},
      },
    })
    idle.push(connection)
    connections.push(connection)
  }

  const interval = 1000 / settings.ratePerSec
  const total = Math.floor(settings.ratePerSec * settings.durationSec)
  const started = performance.now()
  const cpuBefore = process.cpuUsage()
  const send = () => {
    const now = performance.now()
    while (sent < total && started + sent * interval <= now) {
      const due = started + sent * interval
      sent++
      const connection = idle.pop()
      if (connection) write(connection, due)
      else {
        waited++
        waiting.push(due)
      }
    }
  }
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      send()
      if (sent >= total) {
        clearInterval(timer)
        resolve()
      }
    }, 1)
  })
  const sendingSec = (performance.now() - started) / 1000
  stopped = true
  await Promise.race([
    new Promise<void>((resolve) => {
      allAnswered = resolve
      settle()
    }),
    Bun.sleep(DRAIN_MS),
  ])
  for (const connection of connections) connection.socket?.end()
  const cpu = process.cpuUsage(cpuBefore)
  const wallSec = (performance.now() - started) / 1000
  return {
    offeredPerSec: settings.ratePerSec,
    answeredPerSec: answered / sendingSec,
    sent,
    answered,
    non2xx,
    errors: sent - answered,
    waitedForConnection: waited,
    latency: latency.summary(),
    sinceDue: sinceDue.summary(),
    generatorCores: wallSec > 0 ? (cpu.user + cpu.system) / 1e6 / wallSec : 0,
  }
}
