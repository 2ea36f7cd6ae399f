// The runner's log writer: appends go out without waiting for each other, in
// order, at most maxAhead at once, and the first failure stops the writer.
import { expect, test } from 'bun:test'
import { createLogWriter } from '../../src/conversation/turn/log-writer.ts'
import { createMemoryTurnLogs } from '../../src/state/turn-log/memory-turn-logs.ts'
import { TurnLogFencedError, type TurnLogStore } from '../../src/state/turn-log/turn-log-store.ts'

/** A store whose appends settle only when the test says so. */
function heldStore() {
  const held: { frame: string; resolve: () => void; reject: (error: Error) => void }[] = []
  const store = {
    append(_messageId: string, items: readonly string[]) {
      return new Promise<void>((resolve, reject) => {
        held.push({ frame: items[0] ?? '', resolve, reject })
      })
    },
  } as unknown as TurnLogStore
  return { store, held }
}

test('writes are stored in order, and stored callbacks run in that order', async () => {
  const logs = createMemoryTurnLogs({ retentionMs: 1_000 })
  await logs.open({ messageId: 'm', conversationId: 'c', userId: 'u' })
  const writer = createLogWriter(logs, 'm', 0)
  const seen: string[] = []
  for (const frame of ['a', 'b', 'c']) await writer.write(frame, () => seen.push(frame))
  await writer.settle()
  expect(seen).toEqual(['a', 'b', 'c'])
  expect(await logs.readAll('m')).toEqual(['a', 'b', 'c'])
  await logs.close()
})

test('a write does not wait for earlier ones until maxAhead are outstanding', async () => {
  const { store, held } = heldStore()
  const writer = createLogWriter(store, 'm', 0, 3)
  expect(writer.write('a')).toBeUndefined()
  expect(writer.write('b')).toBeUndefined()
  expect(held.map((append) => append.frame)).toEqual(['a', 'b'])
  let thirdDone = false
  const third = writer.write('c')?.then(() => {
    thirdDone = true
  })
  await Promise.resolve()
  expect(thirdDone).toBe(false)
  for (const append of held) append.resolve()
  await third
  expect(thirdDone).toBe(true)
})

test('the first failure is thrown by the next write and by settle; later stores are not counted', async () => {
  const { store, held } = heldStore()
  const writer = createLogWriter(store, 'm', 0)
  const stored: string[] = []
  await writer.write('a', () => stored.push('a'))
  await writer.write('b', () => stored.push('b'))
  held[0]?.reject(new TurnLogFencedError('m'))
  held[1]?.resolve()
  await expect(writer.settle()).rejects.toBeInstanceOf(TurnLogFencedError)
  expect(() => writer.write('c')).toThrow(TurnLogFencedError)
  expect(stored).toEqual([])
  expect(held).toHaveLength(2)
})
