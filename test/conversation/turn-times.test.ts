// The times one turn stores stay in order once the database rounds them to
// the millisecond (CONTRACT §17: a reply is later than what it answers).
import { expect, test } from 'bun:test'
import { dateOf, turnStepTime } from '../../src/conversation/messages.ts'

// Starts spread over whole seconds and every tenth of a microsecond around
// half a millisecond, where adding 0.001 to a float can round back.
const starts = Array.from({ length: 20_000 }, (_, index) => 1_764_093_000.0005 + index * 1e-7)

test('each step is stored a millisecond later than the one before, and than the start', () => {
  let collisions = 0
  for (const start of starts) {
    const stored = [0, 1, 2, 3].map((step) => dateOf(turnStepTime(start, step)).getTime())
    // A step after a time is stored later than that time itself (an import's undated message).
    if ((stored[1] as number) <= dateOf(start).getTime()) collisions++
    for (let step = 1; step < stored.length; step++)
      if ((stored[step] as number) - (stored[step - 1] as number) !== 1) collisions++
  }
  expect(collisions).toBe(0)
})

test('a step time keeps a fraction (clients parse create_time as a float) and starts at or after its turn', () => {
  for (const start of starts.slice(0, 100)) {
    const time = turnStepTime(start, 0)
    expect(Number.isInteger(time)).toBe(false)
    expect(time).toBeGreaterThanOrEqual(Math.floor(start * 1000) / 1000)
    expect(time - start).toBeLessThan(0.001)
  }
})
