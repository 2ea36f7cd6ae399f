// allInOrder: statements sent together fail with the first failure by
// position, even when a later statement's failure settles first (as Postgres's
// refusals of the rest of an aborted transaction can), and only after every
// statement has settled; skipped (falsy) statements are ignored.
import { expect, test } from 'bun:test'
import { allInOrder } from '../../src/storage/db.ts'

function deferred() {
  let resolve!: (value?: unknown) => void
  let reject!: (error: unknown) => void
  const promise = new Promise((ok, fail) => {
    resolve = ok
    reject = fail
  })
  return { promise, resolve, reject }
}

test('the first failure by position wins over an earlier-settling later one', async () => {
  const first = deferred()
  const second = deferred()
  const third = deferred()
  const all = allInOrder([first.promise, second.promise, third.promise])
  third.reject(new Error('current transaction is aborted'))
  second.reject(new Error('duplicate message'))
  first.resolve()
  await expect(all).rejects.toThrow('duplicate message')
})

test('it waits for every statement before failing', async () => {
  const failed = deferred()
  const slow = deferred()
  let settled = false
  const all = allInOrder([failed.promise, slow.promise]).catch((error: Error) => {
    settled = true
    return error.message
  })
  failed.reject(new Error('refused'))
  await new Promise((resolve) => setImmediate(resolve))
  expect(settled).toBe(false)
  slow.resolve()
  expect(await all).toBe('refused')
})

test('resolves when every statement succeeds; skipped ones are ignored', async () => {
  await expect(
    allInOrder([Promise.resolve(1), false, undefined, Promise.resolve(2)]),
  ).resolves.toBe(undefined)
})
