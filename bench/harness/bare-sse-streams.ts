// The many-streams scenario against its reference: the same clients, ramp,
// message and chunk pace, measured by the same code (measureManyStreams), but
// aimed at the bare SSE server (bare-sse-server.ts), one instance, instead of
// the service. What the machine delivers when a stream costs only its timer
// and its HTTP writes: the service's figures divided by these are its own cost.
import type { Backend } from './backend.ts'
import { startBareSse } from './bare.ts'
import type { Cluster } from './cluster.ts'
import {
  type ManyStreamsResult,
  type ManyStreamsSettings,
  measureManyStreams,
} from './streaming.ts'

/** The reference has no storage: only its own process (and the harness) is metered, no Redis, no pools. */
const NO_STORAGE: Backend = {
  label: 'bare SSE reference',
  databaseUrl: 'memory://',
  redisUrl: undefined,
  stateUrl: undefined,
}

export async function runManyStreamsOnBareSse(
  settings: Omit<ManyStreamsSettings, 'instances' | 'profileName'>,
): Promise<ManyStreamsResult> {
  const server = await startBareSse(settings.chunkDelayMs)
  const deployment: Cluster = {
    servers: [server],
    loadBalancer: undefined,
    targets: [server.url],
    routing: 'direct',
    stop: server.stop,
  }
  try {
    return await measureManyStreams(deployment, NO_STORAGE, settings)
  } finally {
    await server.stop()
  }
}
