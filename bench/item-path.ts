// What a streamed item costs this process on its way from the runner to an SSE
// response body, in process (no sockets, no database): N turns at once, each
// written as the runner writes a first turn (turn/title.ts over
// turn/reply-log.ts, one append frame per chunk, each write awaited) into a
// turn log, and read by one reader as a response does (turn/stream-reader.ts
// readTurnStream, counted as the service counts it, in stream/sse-response.ts's
// body, read to its end). The writers take one item each per tick of a shared
// clock (one macrotask), as turns of a paced model do, so readers wake and
// write once per item. Reports this process's CPU time per append item.
//
// With --against=DIR the same run also loads the modules of another checkout
// (e.g. /work/main) and alternates rounds between the two, so both are
// measured side by side on a busy machine; it also checks that both wrote the
// same bytes to every response.
//
//   bun run bench/item-path.ts [--turns=200] [--items=60] [--rounds=20] [--against=/work/main]
//   REDIS_URL=redis://127.0.0.1:6379/12 bun run bench/item-path.ts --redis [...]
//
// --redis writes the logs to Redis (storage/turn-log/redis-turn-logs.ts; the
// readers then follow the process's mirrors), else to the in-process logs.
import { resolve } from 'node:path'
import Redis from 'ioredis'
import { wholeNumberFlag } from './cli-flags.ts'

const turns = wholeNumberFlag('turns', 200, { min: 1, max: 100_000 })
const items = wholeNumberFlag('items', 60, { min: 1, max: 100_000 })
const rounds = wholeNumberFlag('rounds', 20, { min: 1, max: 10_000 })
const against = process.argv.find((arg) => arg.startsWith('--against='))?.slice('--against='.length)
const onRedis = process.argv.includes('--redis')
const redisUrl = process.env.REDIS_URL
if (onRedis && !redisUrl?.startsWith('redis://127.0.0.1'))
  throw new Error('--redis needs REDIS_URL on loopback (see the header)')

const HERE = resolve(import.meta.dir, '..')

/** The modules of one checkout that an item goes through. */
async function load(root: string) {
  const src = (path: string) => import(resolve(root, 'src', path))
  const [memory, redisLogs, reader, sse, encoding, replyLog, title, lifecycle, checkpoints] =
    await Promise.all([
      src('state/turn-log/memory-turn-logs.ts'),
      src('state/turn-log/redis-turn-logs.ts'),
      src('conversation/turn/stream-reader.ts'),
      src('conversation/stream/sse-response.ts'),
      src('conversation/stream/encoding.ts'),
      src('conversation/turn/reply-log.ts'),
      src('conversation/turn/title.ts'),
      src('conversation/turn/lifecycle.ts'),
      src('conversation/turn/reply-checkpoints.ts'),
    ])
  const [catalogue, local] = await Promise.all([
    src('conversation/model/catalogue.ts'),
    src('conversation/model/local.ts'),
  ])
  return {
    root,
    memory,
    redisLogs,
    reader,
    sse,
    encoding,
    replyLog,
    title,
    lifecycle,
    checkpoints,
    models: catalogue.singleModelCatalogue(
      local.createLocalModel({ slug: 'local', chunkDelayMs: 0 }),
    ),
  }
}
type Path = Awaited<ReturnType<typeof load>>

/** A promise every writer awaits between two items, resolved once a macrotask. */
function clock() {
  let tick = Promise.withResolvers<void>()
  let running = true
  const step = () => {
    if (!running) return
    const current = tick
    tick = Promise.withResolvers<void>()
    current.resolve()
    setImmediate(step)
  }
  setImmediate(step)
  return {
    next: () => tick.promise,
    stop: () => {
      running = false
      tick.resolve()
    },
  }
}

/** A stream's items counted as the service counts them (service.ts `observed`). */
async function* observed(batches: AsyncGenerator<readonly string[]>) {
  let count = 0
  for await (const batch of batches) {
    count += batch.length
    yield batch
  }
  return count
}

const CHUNKS = Array.from({ length: items }, (_, index) => ` word${index}`)

/** One round: every turn written and read to its end; returns CPU µs per append item and the bodies. */
async function round(path: Path, redis: Redis | undefined, tag: string) {
  const logs = redis
    ? path.redisLogs.createRedisTurnLogs({
        redis,
        keyPrefix: `bench-item:${tag}:`,
        retentionMs: 60_000,
      })
    : path.memory.createMemoryTurnLogs({ retentionMs: 60_000 })
  const stopping = new AbortController()
  const checkpoints = path.checkpoints.createReplyCheckpoints(
    undefined,
    3_600_000,
    () => {},
    !logs.durable,
  )
  const deps = {
    logs,
    checkpoints,
    models: path.models,
    warn: (message: string, error: unknown) => console.error(message, error),
    storeRecoveryMs: 15_000,
    titleWaitMs: 0,
  }
  const readerOptions = { recoveryMs: 30_000, checkMs: 1_000, stopping: stopping.signal }
  const { encoding } = path
  const prefix = [
    encoding.frameOf(encoding.deltaEncodingItem()),
    encoding.frameOf(encoding.resumeTokenItem('t'.repeat(300), 'c')),
  ]
  const ticks = clock()
  const started = process.cpuUsage()
  const bodies = await Promise.all(
    Array.from({ length: turns }, async (_, index) => {
      const turn = {
        messageId: `m-${index}`,
        conversationId: `c-${index}`,
        userId: `u-${index}`,
        seq: 1,
        createTime: 1_700_000_000,
        metadata: { model_slug: 'local', parent_id: `p-${index}`, first_turn: true as const },
        runToken: 1,
        conversationInstructions: null,
        userInstructions: null,
      }
      await logs.open(turn, prefix)
      const response: Response = path.sse.sseResponse(
        {
          read: (signal: AbortSignal) =>
            observed(path.reader.readTurnStream(logs, turn, 0, signal, readerOptions)),
        },
        15_000,
      )
      const body = response.text()
      const run = { token: 1, signal: new AbortController().signal }
      const inputs = [
        {
          id: `p-${index}`,
          role: 'user',
          content: { content_type: 'text', parts: ['hi'] },
          createTime: 1,
        },
      ]
      const log = path.title.titledReplyLog(
        deps,
        turn,
        inputs,
        path.replyLog.createReplyLog(deps, turn, run, inputs),
        run.signal,
      )
      for (const chunk of CHUNKS) {
        await log.write(encoding.appendFrame(chunk), chunk)
        await ticks.next()
      }
      await log.settle()
      await path.lifecycle.endStream(logs, turn, run.token, { finish: 'stop' })
      log.forget()
      return body
    }),
  )
  const cpu = process.cpuUsage(started)
  ticks.stop()
  checkpoints.close()
  stopping.abort()
  await logs.close()
  return { usPerItem: (cpu.user + cpu.system) / (turns * items), bodies }
}

const redis = onRedis ? new Redis(redisUrl as string) : undefined
const paths = [await load(HERE), ...(against ? [await load(resolve(against))] : [])]
const results = new Map<string, number[]>(paths.map((path) => [path.root, []]))
try {
  // Round 0 of each warms up (JIT) and is not reported.
  for (let index = 0; index <= rounds; index++) {
    const bodies: string[][] = []
    for (const path of index % 2 === 0 ? paths : [...paths].reverse()) {
      const outcome = await round(path, redis, `${process.pid}-${index}-${paths.indexOf(path)}`)
      if (index > 0) results.get(path.root)?.push(outcome.usPerItem)
      bodies.push(outcome.bodies)
    }
    const [first, second] = bodies
    if (second && first?.some((body, turn) => body !== second[turn]))
      throw new Error('the two checkouts wrote different bytes')
  }
} finally {
  redis?.disconnect()
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
console.log(
  `${turns} turns x ${items} items, ${rounds} rounds, ${onRedis ? 'Redis' : 'in-process'} logs`,
)
console.log('| checkout | CPU µs per item, median | min | max |\n|---|--:|--:|--:|')
for (const [root, values] of results)
  console.log(
    `| ${root} | ${median(values).toFixed(2)} | ${Math.min(...values).toFixed(2)} | ${Math.max(...values).toFixed(2)} |`,
  )
const [mine, theirs] = [...results.values()]
if (mine && theirs)
  // Rounds run in pairs, one of each: the ratio within a pair is the steadier figure.
  console.log(
    `this checkout / the other, median of the ${rounds} paired rounds: ${median(mine.map((value, index) => value / (theirs[index] ?? Number.NaN))).toFixed(3)}`,
  )
