// Commands an ioredis client issues in one turn of the event loop leave the
// process in one socket write. ioredis writes each command to its socket as it
// is issued, and every write is a syscall that also wakes Redis: the commands
// a turn of the conversation issues together (its finish's invalidation and
// context push) cost one each, and under load so do those of every request
// the loop serves in one turn (each request's rate-limit check, say). The
// socket is corked at its first write and uncorked by setImmediate, once the
// loop has run the I/O callbacks at hand, so Bun's net.Socket sends
// everything written meanwhile as one write (one sendto), below ioredis: its
// command queue, replies, timeouts and reconnects see exactly the commands
// they saw before.
//
// Not ioredis' enableAutoPipelining, which does this a layer up, per
// process.nextTick: a connection cut while an auto-pipeline was in flight
// left its queue stuck, so every later command of the cache waited
// (resilient-cache.test.ts, "drop").
import type { Socket } from 'node:net'
import type Redis from 'ioredis'

const coalescing = new WeakSet<Socket>()

/** Corks `socket` at its first write and uncorks it once the loop has run the I/O at hand (setImmediate). */
function coalesceSocketWrites(socket: Socket): void {
  if (coalescing.has(socket)) return
  coalescing.add(socket)
  const write = socket.write
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  socket.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    if (!corked) {
      corked = true
      socket.cork()
      setImmediate(uncork)
    }
    return write.apply(this, args)
  } as Socket['write']
}

/** Makes `redis` send the commands of one loop turn in one socket write, on every connection it opens. */
export function coalesceWritesPerLoopTurn(redis: Redis): void {
  const onConnection = () => {
    const socket = redis.stream as Socket | undefined
    if (socket) coalesceSocketWrites(socket)
  }
  redis.on('connect', onConnection)
  onConnection()
}
