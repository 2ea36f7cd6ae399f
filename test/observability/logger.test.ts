// The logger censors secret-bearing fields, at a line's top level and one
// level down, whatever else the line holds, and leaves the rest as logged.
import { expect, test } from 'bun:test'
import { preformattedLines } from '../../src/observability/logger.ts'
import { collectingLogger } from '../support/log-lines.ts'

test('secret-bearing fields are censored at the top level and one level down', async () => {
  const { log, raw, waitFor } = collectingLogger('info')
  log.info(
    {
      authorization: 'Bearer top-secret-1',
      token: 'top-secret-2',
      request: { password: 'top-secret-3', apiKey: 'top-secret-4', method: 'GET' },
      status: 200,
    },
    'request',
  )
  const line = await waitFor((logged) => logged.msg === 'request')
  expect(raw()).not.toContain('top-secret')
  expect(line).toMatchObject({
    authorization: '***',
    token: '***',
    request: { password: '***', apiKey: '***', method: 'GET' },
    status: 200,
    msg: 'request',
  })
})

test('a line without secrets is logged unchanged', async () => {
  const { log, waitFor } = collectingLogger('info')
  const fields = { request_id: 'r-1', route: '/x', nested: { secretary: 'kept' } }
  log.info(fields, 'request')
  expect(await waitFor((logged) => logged.msg === 'request')).toMatchObject(fields)
  expect(fields.nested.secretary).toBe('kept')
})

test('a preformatted line is the line pino writes for the same fields, bindings included', async () => {
  const collected = collectingLogger('info')
  const { log, raw } = collected
  const child = log.child({ instance: 'a"1' })
  const fields = { request_id: 'r-1', route: '/x/:id', status: 200, duration_ms: 0.4 }
  child.info(fields, 'request')
  preformattedLines(child, 'request')(
    'info',
    '"request_id":"r-1","route":"/x/:id","status":200,"duration_ms":0.4',
  )
  // Below the logger's level nothing is written.
  preformattedLines(child, 'request')('debug', '"request_id":"r-2"')
  const [byPino, preformatted, extra] = raw()
    .split('\n')
    .map((text) => text.replace(/"time":"[^"]+"/, '"time":"T"'))
  expect(preformatted).toBe(byPino as string)
  expect(extra).toBe('')
  const { lines } = collected
  expect(lines.map((line) => line.request_id)).toEqual(['r-1', 'r-1'])
  expect(Date.parse(String(lines[1]?.time))).toBeGreaterThan(Date.now() - 60_000)
})
