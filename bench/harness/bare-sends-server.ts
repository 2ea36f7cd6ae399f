// The stack reference of the send scenario: about the least any Bun +
// postgres.js + ioredis HTTP service can do for a send. Bun.serve, no
// framework, answers POST /backend-api/f/conversation by running the
// statements of one captured turn (turn-replay.ts) on a postgres.js pool of
// the service's size and its Redis commands in one pipeline per database,
// then sends the captured SSE reply whole (not over time). No model,
// validation, logging or state kept between requests: what the service does
// beyond this is what its ratio to the reference measures. Started by bare-sends.ts with the file of the
// turn as its argument and DATABASE_URL; prints its port.
import { readFileSync } from 'node:fs'
import { deserialize } from 'node:v8'
import Redis from 'ioredis'
import postgres from 'postgres'
import { POSTGRES_POOL_SIZE } from '../../src/storage/postgres.ts'
import { type ReplayedTurn, turnReplay } from './turn-replay.ts'

const [turnFile] = Bun.argv.slice(2)
const databaseUrl = process.env.DATABASE_URL
if (!turnFile || !databaseUrl?.startsWith('postgres'))
  throw new Error('usage: DATABASE_URL=postgres://… bun bare-sends-server.ts <turn file>')

const replay = turnReplay(deserialize(readFileSync(turnFile)) as ReplayedTurn)
const sql = postgres(databaseUrl, { max: POSTGRES_POOL_SIZE, onnotice: () => {} })
/** One client per server and database the turn's commands ran in ("host:port/db"). */
const clients = new Map<string, Redis>()
const redis = (where: string) => {
  let client = clients.get(where)
  if (!client) {
    client = new Redis(`redis://${where}`, { maxRetriesPerRequest: 1 })
    clients.set(where, client)
  }
  return client
}
const headers = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  routes: {
    '/backend-api/f/conversation': {
      async POST(request) {
        await request.json()
        try {
          return new Response(await replay.run(sql, redis), { headers })
        } catch (error) {
          return new Response(error instanceof Error ? error.message : String(error), {
            status: 500,
          })
        }
      },
    },
  },
  fetch: () => new Response('not found', { status: 404 }),
})
console.log(String(server.port))
