// Where a cache hit's CPU goes, by elimination: the history and list hits run
// in this process through app.handle (no sockets, so no HTTP cost on either
// side) on apps built up one layer at a time, in createApp's order: a bare
// Elysia route answering the same bytes, the conversation routes alone, then
// each layer every route goes through (request id and access line, response
// headers, error mapping, CORS, body limit, ops routes, input guard, docs,
// rate limits, document store, playground), and last createApp itself (so a
// drift between this list and the app shows). Rounds rotate over the apps and
// the report gives each one's median CPU µs per request and what its layer
// added, so the figures of one run can be compared on a busy machine.
//
//   DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?search_path=bench,public' \
//   REDIS_URL=redis://127.0.0.1:6379/12 bun run bench/hit-cost.ts [--requests=10000] [--rounds=7]
//
// Without DATABASE_URL / REDIS_URL it runs on PGlite and the in-process cache.
// Access lines go to /dev/null through the service's own logger and
// destination; the rate limits are off, as in the harness.
import { openSync } from 'node:fs'
import { Elysia } from 'elysia'
import { docsPlugin } from '../plugins/docs/index.ts'
import { docstorePlugin } from '../plugins/docstore/index.ts'
import { playgroundPlugin } from '../plugins/playground/index.ts'
import { createApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { conversationRoutes } from '../src/conversation/routes.ts'
import { openDependencies } from '../src/dependencies.ts'
import { createAuthenticator } from '../src/http/auth.ts'
import { bodyLimit } from '../src/http/body-limit.ts'
import { corsPlugin } from '../src/http/cors.ts'
import { errorHandlerWith } from '../src/http/error-handler.ts'
import { inputGuard } from '../src/http/input-guard.ts'
import { opsRoutes } from '../src/http/ops-routes.ts'
import { responseHeaders } from '../src/http/response-headers.ts'
import { batchedDestination } from '../src/observability/log-destination.ts'
import { createLogger } from '../src/observability/logger.ts'
import { createMetrics } from '../src/observability/metrics.ts'
import { requestLog } from '../src/observability/request-log.ts'
import { rateLimitPlugin } from '../src/rate-limit/rate-limit-plugin.ts'
import { wholeNumberFlag } from './cli-flags.ts'

const requests = wholeNumberFlag('requests', 10_000, { min: 1, max: 200_000 })
const rounds = wholeNumberFlag('rounds', 7, { min: 1, max: 50 })
for (const name of ['DATABASE_URL', 'REDIS_URL']) {
  const url = process.env[name]
  if (url && !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname))
    throw new Error(`${name} must point at loopback`)
}

const config = loadConfig({
  ...process.env,
  APP_VARIANT: 'full',
  DATABASE_URL: process.env.DATABASE_URL ?? 'memory://',
  REDIS_STATE_URL: 'memory://',
  RATE_LIMIT_SENDS: '0',
  RATE_LIMIT_REQUESTS: '0',
  LOG_LEVEL: 'info',
})
const log = createLogger({
  level: config.logLevel,
  destination: batchedDestination({ fd: openSync('/dev/null', 'w') }),
})
const metrics = createMetrics({ processMetrics: false })
const deps = await openDependencies(config, { log, metrics })
const { db, cache, conversations } = deps
if (!db || !cache || !conversations) throw new Error('the full variant did not open its stores')
const full = createApp(deps)

// One reader with one conversation, read once so both reads are cache hits.
const reader = `hit-cost-${crypto.randomUUID()}`
const send = await full.handle(
  new Request('http://localhost/backend-api/f/conversation', {
    method: 'POST',
    headers: { 'x-user-id': reader, 'content-type': 'application/json' },
    body: JSON.stringify({
      action: 'next',
      messages: [
        {
          author: { role: 'user' },
          content: { content_type: 'text', parts: ['what does a hit cost?'] },
        },
      ],
    }),
  }),
)
const started = /"conversation_id": ?"([0-9a-f-]{36})"/.exec(await send.text())?.[1]
if (!started) throw new Error('the send did not start a conversation')
const conversationId: string = started
const paths = {
  history: `/backend-api/conversation/${conversationId}`,
  list: '/backend-api/conversations?limit=20',
}
/** Reads until the reply is stored and the answer stops changing (the turn is over). */
async function settledBody(path: string): Promise<string> {
  let previous = ''
  for (let attempt = 0; attempt < 100; attempt++) {
    const response = await full.handle(
      new Request(`http://localhost${path}`, { headers: { 'x-user-id': reader } }),
    )
    const body = await response.text()
    if (response.status !== 200) throw new Error(`${path}: HTTP ${response.status} ${body}`)
    if (body === previous && body.includes('finished_successfully')) return body
    if (body === previous && path === paths.list && body.includes(conversationId)) return body
    previous = body
    await Bun.sleep(50)
  }
  throw new Error(`${path} did not settle`)
}
const sizes = {
  history: (await settledBody(paths.history)).length,
  list: (await settledBody(paths.list)).length,
}

const auth = createAuthenticator({ jwtSecret: config.authJwtSecret, jwks: config.authJwks })
const routes = () => conversationRoutes({ conversations, auth, keepaliveMs: config.sseKeepaliveMs })
/** The layers of createApp, in its order, each with what it adds to an app. */
// biome-ignore lint/suspicious/noExplicitAny: each layer is a different Elysia type
type Layer = [name: string, add: (app: any) => any]
const layers: Layer[] = [
  ['request id + access line + metrics', (app) => app.use(requestLog({ log, metrics }))],
  ['response headers', (app) => app.use(responseHeaders)],
  ['error mapping', (app) => app.use(errorHandlerWith(log))],
  ['CORS', (app) => app.use(corsPlugin(config.corsOrigins))],
  ['body limit', (app) => app.use(bodyLimit)],
  [
    'ops routes',
    (app) =>
      app.use(opsRoutes({ readiness: deps.readiness, metrics, adminToken: config.adminToken })),
  ],
  ['input guard', (app) => app.use(inputGuard)],
  ['API docs', (app) => app.use(docsPlugin({ variant: config.variant }))],
  ['rate limits (none set)', (app) => app.use(rateLimitPlugin({ limits: {}, auth, metrics }))],
  ['document store', (app) => app.use(docstorePlugin({ db, cache, config, log }))],
  ['playground', (app) => app.use(playgroundPlugin())],
]

interface Candidate {
  name: string
  handle: (path: keyof typeof paths) => Promise<Response>
}
const asReader = { 'x-user-id': reader }
const bareDocuments = { history: 'x'.repeat(sizes.history), list: 'x'.repeat(sizes.list) }
const bare = new Elysia().get(
  '/bytes/:which',
  ({ params }) =>
    new Response(bareDocuments[params.which as keyof typeof paths], {
      headers: { 'content-type': 'application/json' },
    }),
)
const candidates: Candidate[] = [
  {
    name: 'bare route, same bytes',
    handle: (which) => bare.handle(new Request(`http://localhost/bytes/${which}`)),
  },
]
const viaApp = (
  name: string,
  app: { handle: (request: Request) => Promise<Response> },
): Candidate => ({
  name,
  handle: (which) =>
    app.handle(new Request(`http://localhost${paths[which]}`, { headers: asReader })),
})
candidates.push(viaApp('conversation routes alone', new Elysia({ normalize: false }).use(routes())))
for (let count = 1; count <= layers.length; count++) {
  let app = new Elysia({ normalize: false })
  for (const [, add] of layers.slice(0, count)) app = add(app)
  candidates.push(viaApp(`+ ${layers[count - 1]?.[0]}`, app.use(routes())))
}
candidates.push(viaApp('createApp (the service)', full))

/** CPU µs per request of `count` requests, yielding to the event loop every 32 (as a server does). */
async function cpuPerRequest(candidate: Candidate, which: keyof typeof paths, count: number) {
  const started = process.cpuUsage()
  for (let index = 0; index < count; index++) {
    const response = await candidate.handle(which)
    if (response.status !== 200) throw new Error(`${candidate.name}: HTTP ${response.status}`)
    await response.text()
    if (index % 32 === 31) await new Promise(setImmediate)
  }
  const used = process.cpuUsage(started)
  return (used.user + used.system) / count
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const lines: string[] = []
for (const which of ['history', 'list'] as const) {
  const samples = new Map<string, number[]>(candidates.map((candidate) => [candidate.name, []]))
  for (const candidate of candidates) await cpuPerRequest(candidate, which, 2_000)
  for (let round = 0; round < rounds; round++)
    for (const candidate of candidates)
      samples.get(candidate.name)?.push(await cpuPerRequest(candidate, which, requests))
  lines.push(
    `\n${which} hit (${sizes[which]} bytes): median CPU µs per request of ${rounds} rounds`,
  )
  lines.push('| app | µs | added by the layer | ÷ bare route |', '|---|--:|--:|--:|')
  const bareUs = median(samples.get(candidates[0]?.name ?? '') ?? [])
  let previous: number | undefined
  for (const candidate of candidates) {
    const us = median(samples.get(candidate.name) ?? [])
    const added =
      previous === undefined || candidate.name.startsWith('createApp')
        ? ''
        : (us - previous).toFixed(1)
    lines.push(`| ${candidate.name} | ${us.toFixed(1)} | ${added} | ${(bareUs / us).toFixed(2)}× |`)
    if (!candidate.name.startsWith('bare')) previous = us
  }
}
const machine = `${navigator.hardwareConcurrency} CPUs, load average ${(await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')}`
console.log(
  `## Cache hit cost by layer, in process (${new Date().toISOString()}, Bun ${Bun.version}, ${machine}; ${
    process.env.REDIS_URL ? 'Redis behind the near cache' : 'in-process cache'
  }, ${process.env.DATABASE_URL ? 'Postgres' : 'PGlite'})`,
)
console.log(lines.join('\n'))
console.log(
  '\nIn process there is no HTTP: a served request adds the same socket and parsing cost to every row, so ratios over HTTP are closer to 1 than these.',
)
await deps.close()
process.exit(0)
