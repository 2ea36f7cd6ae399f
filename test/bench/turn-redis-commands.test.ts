// The capture of a turn's Redis commands for the stack reference
// (bench/harness/turn-redis-commands.ts): only the capture's own commands,
// sent by a client rather than a script, and none that blocks or subscribes;
// over a real Redis (TEST_REDIS_URL), MONITOR's view up to the moment the
// capture stops, whatever database the commands ran in.
import { expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import Redis from 'ioredis'
import { isCapturedCommand, monitorCommands } from '../../bench/harness/turn-redis-commands.ts'
import { TEST_REDIS_URL } from '../support/backends.ts'

const PREFIX = 'cap-1234:'

test('keeps a client command naming a key under the prefix; leaves out scripts, blocking reads, subscriptions and the rest', () => {
  expect(
    isCapturedCommand(['evalsha', 'abc', '1', `${PREFIX}lease:{c}`], '127.0.0.1:5000', PREFIX),
  ).toBe(true)
  expect(isCapturedCommand(['DEL', `${PREFIX}chat:{c}`], '127.0.0.1:5000', PREFIX)).toBe(true)
  // A script's own calls are part of the EVALSHA that ran it.
  expect(isCapturedCommand(['xadd', `${PREFIX}turnlog:x`, '*'], 'lua', PREFIX)).toBe(false)
  // Another client's key, or none.
  expect(isCapturedCommand(['get', 'other:key'], '127.0.0.1:5000', PREFIX)).toBe(false)
  expect(isCapturedCommand(['ping'], '127.0.0.1:5000', PREFIX)).toBe(false)
  // Waiting is not work, and would block a replayed pipeline.
  expect(
    isCapturedCommand(
      ['XREAD', 'BLOCK', '1000', 'STREAMS', `${PREFIX}s`, '0'],
      '127.0.0.1:5000',
      PREFIX,
    ),
  ).toBe(false)
  expect(isCapturedCommand(['ssubscribe', `${PREFIX}stops`], '127.0.0.1:5000', PREFIX)).toBe(false)
  expect(isCapturedCommand([], '127.0.0.1:5000', PREFIX)).toBe(false)
})

test.skipIf(!TEST_REDIS_URL)(
  'captures, in order and with its database, every command answered before stop()',
  async () => {
    const prefix = `cap-${randomBytes(4).toString('hex')}:`
    const base = new URL(TEST_REDIS_URL as string)
    const inDb = (db: number) => {
      const url = new URL(base)
      url.pathname = `/${db}`
      return new Redis(url.toString())
    }
    const a = inDb(14)
    const b = inDb(15)
    try {
      const monitor = await monitorCommands(TEST_REDIS_URL as string, prefix)
      await a.set(`${prefix}one`, '1')
      await b.rpush(`${prefix}list`, 'x', 'y')
      await a.get('not-ours')
      await a.eval("return redis.call('del', KEYS[1])", 1, `${prefix}one`)
      // Sent without waiting: stop() must still see it.
      void b.del(`${prefix}list`)
      const commands = await monitor.stop()
      const server = base.host
      expect(commands).toEqual([
        { server, db: 14, args: ['set', `${prefix}one`, '1'] },
        { server, db: 15, args: ['rpush', `${prefix}list`, 'x', 'y'] },
        {
          server,
          db: 14,
          args: ['eval', "return redis.call('del', KEYS[1])", '1', `${prefix}one`],
        },
        { server, db: 15, args: ['del', `${prefix}list`] },
      ])
    } finally {
      a.disconnect()
      b.disconnect()
    }
  },
)
