// Commands an ioredis client issues in one tick leave the process in one
// socket write. ioredis writes each command to its socket as it is issued, and
// every write is a syscall that also wakes Redis: the commands a turn issues
// together (its finish's invalidation and context push) cost one each, and
// under load the commands of many turns do. Corking the socket until the next
// tick makes Bun's net.Socket send them as one write (one sendto), below
// ioredis: its command queue, replies, timeouts and reconnects see exactly the
// commands they saw before.
//
// Not ioredis' enableAutoPipelining, which does this a layer up: a connection
// cut while an auto-pipeline was in flight left its queue stuck, so every
// later command of the cache waited (resilient-cache.test.ts, "drop").
import type { Socket } from 'node:net'
import type Redis from 'ioredis'

const coalescing = new WeakSet<Socket>()

/** Corks `socket` at its first write of a tick and uncorks it on the next tick. */
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
      process.nextTick(uncork)
    }
    return write.apply(this, args)
  } as Socket['write']
}

/** Makes `redis` send the commands of one tick in one socket write, on every connection it opens. */
export function coalesceWritesPerTick(redis: Redis): void {
  const onConnection = () => {
    const socket = redis.stream as Socket | undefined
    if (socket) coalesceSocketWrites(socket)
  }
  redis.on('connect', onConnection)
  onConnection()
}
