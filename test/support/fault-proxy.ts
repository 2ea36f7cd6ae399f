// A TCP proxy on loopback that tests put between the service and a real
// Redis or Postgres, to inject faults the way a network or a server fails:
// - pass:   bytes flow both ways (after `delayMs`, if set, in order);
// - freeze: connections stay open but nothing flows either way, as with a
//           server stopped by SIGSTOP or a network that blackholes packets;
//           what was held flows again, in order, on pass();
// - hold a request: the next chunk a client sends that matches is held,
//           with what the client sends after it on that connection, as by a
//           server still working on that request (what it sends flows);
//           until pass(), or the connection ends;
// - drop:   every open connection is cut and new ones are closed at once, as
//           with a server that died.
import { connect, createServer, type Server, type Socket } from 'node:net'

export type ProxyMode = 'pass' | 'freeze' | 'drop'

export interface FaultProxy {
  readonly port: number
  readonly mode: ProxyMode
  /** Connections accepted so far. */
  readonly accepted: number
  pass(): void
  freeze(): void
  drop(): void
  /** Delay added to every chunk while passing. */
  delay(ms: number): void
  /**
   * Holds the next chunk a client sends that `matches` (and what the client
   * sends after it on that connection) until pass() or the connection ends;
   * resolves once it is held. Other connections, and the server's side, flow.
   */
  holdRequest(matches: (chunk: Buffer) => boolean): Promise<void>
  close(): Promise<void>
}

interface Pipe {
  client: Socket
  upstream: Socket
  held: { to: Socket; chunk: Buffer }[]
  /** Per direction, the delayed writes still pending: later chunks queue behind them. */
  late: Map<Socket, Promise<void>>
}

/** Starts a proxy to target (host:port) on a free loopback port. */
export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let mode: ProxyMode = 'pass'
  let delayMs = 0
  let accepted = 0
  const pipes = new Set<Pipe>()
  let holding: { matches: (chunk: Buffer) => boolean; held: () => void } | undefined

  /**
   * Writes chunk to `to` after the current delay, never before a chunk that
   * came earlier (a TCP stream delays, it does not reorder).
   */
  const deliver = (pipe: Pipe, to: Socket, chunk: Buffer) => {
    const previous = pipe.late.get(to)
    if (delayMs === 0 && previous === undefined) {
      to.write(chunk)
      return
    }
    const at = Date.now() + delayMs
    const written: Promise<void> = (previous ?? Promise.resolve())
      .then(() => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))))
      .then(() => {
        if (!to.destroyed) to.write(chunk)
        if (pipe.late.get(to) === written) pipe.late.delete(to)
      })
    pipe.late.set(to, written)
  }

  const forward = (pipe: Pipe, to: Socket, chunk: Buffer) => {
    if (holding && to === pipe.upstream && holding.matches(chunk)) {
      holding.held()
      holding = undefined
      pipe.held.push({ to, chunk })
      return
    }
    // Behind a held chunk in the same direction: held too (a stream does not reorder).
    if (mode === 'freeze' || pipe.held.some((held) => held.to === to)) {
      pipe.held.push({ to, chunk })
      return
    }
    deliver(pipe, to, chunk)
  }

  const cut = (pipe: Pipe) => {
    pipe.client.destroy()
    pipe.upstream.destroy()
    pipes.delete(pipe)
  }

  const server: Server = createServer((client) => {
    accepted++
    if (mode === 'drop') {
      client.destroy()
      return
    }
    const upstream = connect(target.port, target.host)
    const pipe: Pipe = { client, upstream, held: [], late: new Map() }
    pipes.add(pipe)
    client.on('data', (chunk: Buffer) => forward(pipe, upstream, chunk))
    upstream.on('data', (chunk: Buffer) => forward(pipe, client, chunk))
    for (const socket of [client, upstream]) {
      socket.on('error', () => cut(pipe))
      socket.on('close', () => cut(pipe))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('proxy has no port')

  return {
    port: address.port,
    get mode() {
      return mode
    },
    get accepted() {
      return accepted
    },
    pass() {
      mode = 'pass'
      holding = undefined
      for (const pipe of pipes) {
        for (const { to, chunk } of pipe.held.splice(0)) deliver(pipe, to, chunk)
      }
    },
    freeze() {
      mode = 'freeze'
    },
    drop() {
      mode = 'drop'
      for (const pipe of [...pipes]) cut(pipe)
    },
    delay(ms) {
      delayMs = ms
    },
    holdRequest(matches) {
      return new Promise((held) => {
        holding = { matches, held }
      })
    },
    async close() {
      for (const pipe of [...pipes]) cut(pipe)
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** The URL with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: FaultProxy): string {
  const parsed = new URL(url)
  parsed.hostname = '127.0.0.1'
  parsed.port = String(proxy.port)
  return parsed.toString()
}

/** host and port of a redis:// or postgres:// URL. */
export function targetOf(url: string): { host: string; port: number } {
  const parsed = new URL(url)
  const defaultPort = parsed.protocol.startsWith('redis') ? 6379 : 5432
  return { host: parsed.hostname, port: parsed.port === '' ? defaultPort : Number(parsed.port) }
}
