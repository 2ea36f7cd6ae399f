// A client of a Sentinel-managed primary that its owner did not close stays
// connected through any failover. ioredis's failover detector
// (`failoverDetector`, redis-connections.ts) cuts the client's connection when
// the Sentinels announce a new primary (+switch-master); when the client is
// reconnecting at that moment - asking a Sentinel which node is the primary,
// after the old one died - ioredis takes the cut question for its owner's
// disconnect and ends the client for good: every later command fails with
// "Connection is closed." and nothing reconnects it (an instance's turn state
// stayed unavailable after a Sentinel failover, issue #29;
// test/storage/sentinel-failover.test.ts). Here a client that ended without
// its owner closing it (disconnect or quit) connects again.
import type Redis from 'ioredis'

/** Pause before a client that ended unasked connects again. */
const RECONNECT_AFTER_MS = 100

const kept = new WeakSet<Redis>()

/** Whether `client` reconnects after ending unasked (made so by reconnectUnlessClosed). */
export const reconnectsUnlessClosed = (client: Redis) => kept.has(client)

/** Makes `client` connect again whenever it ends without disconnect() or quit(); returns it. */
export function reconnectUnlessClosed(client: Redis): Redis {
  let closed = false
  const disconnect = client.disconnect.bind(client)
  client.disconnect = (reconnect = false) => {
    if (!reconnect) closed = true
    disconnect(reconnect)
  }
  const quit = client.quit.bind(client)
  client.quit = ((...args: Parameters<Redis['quit']>) => {
    closed = true
    return quit(...args)
  }) as Redis['quit']
  client.on('end', () => {
    if (closed) return
    setTimeout(() => {
      if (!closed && client.status === 'end') client.connect().catch(() => {})
    }, RECONNECT_AFTER_MS)
  })
  kept.add(client)
  return client
}
