// A client told not to send again what a lost connection cut off
// (autoResendUnfulfilledCommands: false, the cache: redis-cache.ts) fails
// those commands when the connection drops. ioredis 6.0.0 does not: on the
// drop it sets the commands waiting for an answer aside to send them again,
// and on reconnecting, told not to, it discards them without settling them
// (redis/ioredis#2193; fixed by #2194, in no release yet). Each such command's
// promise stays pending for good. Alone, that cost one abandoned promise per
// command (the cache's deadline answered its caller); with auto-pipelining
// (redis-connections.ts) it stops the client: ioredis sends a client's next
// batch only once the one in flight has settled, so every later command
// queued behind a batch that never would, and the cache never answered again
// after a dropped connection (test/storage/resilient-cache.test.ts, drop).
// Here they fail as the connection closes, with the error ioredis gives the
// commands it does abort then. A command already settled is not changed, so
// this stays harmless once ioredis settles them itself.
//
// A Cluster's node connections do not reconnect (ioredis fetches the slots
// again instead): a lost node's connection ends and ioredis fails what it
// held. Not needed there.
import type Redis from 'ioredis'

/** Makes `client` fail the commands in flight when its connection drops, unless it sends them again; returns it. */
export function failUnfulfilledOnDrop(client: Redis): Redis {
  if (client.options.autoResendUnfulfilledCommands !== false) return client
  // ioredis sets the commands aside only when the connection was ready (the
  // others are its own handshake's); 'close' comes before any reconnect, so
  // the queue is still the one of the connection that closed.
  let ready = false
  client.on('ready', () => {
    ready = true
  })
  client.on('close', () => {
    if (!ready) return
    ready = false
    for (const { command } of client.commandQueue.toArray())
      command.reject(new Error('Command aborted due to connection close'))
  })
  return client
}
