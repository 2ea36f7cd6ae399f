// The per-conversation actor (a serial mailbox) and the registry that keeps,
// passivates and caps actors.
import { expect, test } from 'bun:test'
import { ConversationActor } from '../../src/conversation/actor.ts'
import { ActorRegistry } from '../../src/conversation/registry.ts'
import { AppError } from '../../src/errors.ts'

test('an actor runs tasks one at a time in arrival order, surviving failures', async () => {
  const actor = new ConversationActor('c')
  const events: string[] = []
  const task =
    (name: string, ms: number, fail = false) =>
    async () => {
      events.push(`start ${name}`)
      await Bun.sleep(ms)
      events.push(`end ${name}`)
      if (fail) throw new Error(name)
      return name
    }
  const results = await Promise.allSettled([
    actor.enqueue(task('a', 20)),
    actor.enqueue(task('b', 1, true)),
    actor.enqueue(task('c', 5)),
  ])
  expect(events).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c'])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect(actor.queued).toBe(0)
})

test('the registry returns one actor per conversation and drops idle ones', async () => {
  let now = 0
  const registry = new ActorRegistry({ idleMs: 1_000, maxActors: 10, now: () => now })
  const a = registry.get('a')
  expect(registry.get('a')).toBe(a)
  let release = () => {}
  const busy = a.enqueue(() => new Promise<void>((resolve) => (release = resolve)))
  registry.get('b')
  now = 5_000
  registry.passivateIdle()
  expect(registry.size).toBe(1) // b was idle; a is busy
  await Bun.sleep(0) // let the task start and hand over its release
  release()
  await busy
  now = 10_000
  registry.passivateIdle()
  expect(registry.size).toBe(0)
  expect(registry.get('a')).not.toBe(a)
  registry.close()
})

test('at the cap the least recently used idle actor makes room; all busy is 429', async () => {
  const registry = new ActorRegistry({ idleMs: 60_000, maxActors: 2 })
  const a = registry.get('a')
  registry.get('b')
  registry.get('a') // a is now the most recent
  registry.get('c') // evicts b
  expect(registry.size).toBe(2)
  expect(registry.get('a')).toBe(a)
  const releases: (() => void)[] = []
  for (const id of ['a', 'c'])
    void registry.get(id).enqueue(() => new Promise<void>((resolve) => releases.push(resolve)))
  let refused: unknown
  try {
    registry.get('d')
  } catch (error) {
    refused = error
  }
  expect(refused).toBeInstanceOf(AppError)
  expect((refused as AppError).status).toBe(429)
  await Bun.sleep(0)
  expect(releases).toHaveLength(2)
  for (const release of releases) release()
  await registry.whenIdle()
  expect(() => registry.get('d')).not.toThrow()
  registry.close()
})
