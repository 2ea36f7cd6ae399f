// Open-loop load at a fixed offered rate (as wrk2 does): requests go out on a
// schedule whether or not earlier ones were answered, over raw keep-alive
// HTTP/1.1 connections, so a slow answer cannot slow the offered load down
// and hide itself. Latency is taken from the moment a request is written to
// the moment its whole response has arrived; the latency from the moment it
// was due is kept too (it adds the generator's own timer lag, about 1 ms).
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
  /** From write to the whole response. */
  latency: Summary
  /** From the moment the request was due (includes the generator's lag). */
  sinceDue: Summary
}

interface Pending {
  due: number
  written: number
}

interface Connection {
  socket: Socket<undefined> | undefined
  pending: Pending[]
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

/** Takes complete responses off the front of buffer; calls onResponse(status) per response. */
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
  let allAnswered: () => void = () => {}

  const connections: Connection[] = []
  for (let index = 0; index < settings.connections; index++) {
    const connection: Connection = { socket: undefined, pending: [], buffer: Buffer.alloc(0) }
    connection.socket = await Bun.connect({
      hostname: url.hostname,
      port: Number(url.port),
      socket: {
        data(_socket, chunk) {
          connection.buffer =
            connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk])
          parseResponses(connection, (status) => {
            const now = performance.now()
            const done = connection.pending.shift()
            if (!done) return
            answered++
            latency.add(now - done.written)
            sinceDue.add(now - done.due)
            if (status < 200 || status > 299) non2xx++
            if (answered + lost === sent && stopped) allAnswered()
          })
        },
        close() {
          lost += connection.pending.length
          connection.pending = []
          connection.socket = undefined
          if (answered + lost === sent && stopped) allAnswered()
        },
        error() {},
      },
    })
    connections.push(connection)
  }

  const interval = 1000 / settings.ratePerSec
  const total = Math.floor(settings.ratePerSec * settings.durationSec)
  let sent = 0
  let stopped = false
  let next = 0
  const started = performance.now()
  const send = () => {
    const now = performance.now()
    while (sent < total && started + sent * interval <= now) {
      // The next idle connection, else the least busy one.
      let chosen: Connection | undefined
      for (let step = 0; step < connections.length; step++) {
        const candidate = connections[(next + step) % connections.length]
        if (!candidate?.socket) continue
        if (!chosen || candidate.pending.length < chosen.pending.length) chosen = candidate
        if (candidate.pending.length === 0) break
      }
      next = (next + 1) % connections.length
      const due = started + sent * interval
      sent++
      if (!chosen?.socket) {
        lost++
        continue
      }
      chosen.pending.push({ due, written: performance.now() })
      chosen.socket.write(request)
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
  if (answered + lost < sent)
    await Promise.race([
      new Promise<void>((resolve) => {
        allAnswered = resolve
      }),
      Bun.sleep(DRAIN_MS),
    ])
  for (const connection of connections) connection.socket?.end()
  return {
    offeredPerSec: settings.ratePerSec,
    answeredPerSec: answered / sendingSec,
    sent,
    answered,
    non2xx,
    errors: sent - answered,
    latency: latency.summary(),
    sinceDue: sinceDue.summary(),
  }
}
