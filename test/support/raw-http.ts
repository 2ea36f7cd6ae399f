// HTTP/1.1 over a bare TCP socket, for tests of what fetch cannot do: send a
// head and then a body a byte at a time, declare a length and never send it,
// and see whether the server closed the connection after its answer.
import { connect, type Socket } from 'node:net'

export interface RawExchange {
  socket: Socket
  /** Everything the server sent so far. */
  received: () => string
  /** Resolves with everything the server sent once it closed the connection. */
  closed: Promise<string>
  /** Writes bytes unless the connection is gone; false once it is. */
  write: (bytes: string) => boolean
  /** Resolves once the server has sent a whole head and `contentLength` body bytes. */
  answered: () => Promise<RawAnswer>
  destroy: () => void
}

export interface RawAnswer {
  status: number
  /** Header names in lower case. */
  headers: Record<string, string>
  body: string
}

/** Parses one answer with a Content-Length (what every error answer has); undefined until whole. */
export function parseAnswer(text: string): RawAnswer | undefined {
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers['content-length'] ?? 0)
  const body = text.slice(end + 4)
  if (Buffer.byteLength(body) < length) return undefined
  return { status: Number(statusLine.split(' ')[1]), headers, body }
}

/** Opens a connection to 127.0.0.1:port and writes `head` (and whatever follows it). */
export function rawExchange(port: number, head: string): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    const waiters = new Set<() => void>()
    const closed = new Promise<string>((done) => socket.on('close', () => done(text)))
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8')
      for (const waiter of [...waiters]) waiter()
    })
    // Before the connection: a failure to connect. After it: a reset while
    // writing to a server that closed, which shows as 'close' all the same.
    socket.on('error', reject)
    socket.once('connect', () => {
      socket.write(head)
      resolve({
        socket,
        received: () => text,
        closed,
        write: (bytes) => !socket.destroyed && !socket.writableEnded && socket.write(bytes),
        answered: () =>
          new Promise<RawAnswer>((done, fail) => {
            const check = () => {
              const answer = parseAnswer(text)
              if (answer) {
                waiters.delete(check)
                done(answer)
              }
            }
            waiters.add(check)
            void closed.then(() => {
              check()
              if (waiters.has(check)) fail(new Error(`closed without a whole answer: ${text}`))
            })
            check()
          }),
        destroy: () => socket.destroy(),
      })
    })
  })
}
