// The logger censors secret-bearing fields, at a line's top level and one
// level down, whatever else the line holds, and leaves the rest as logged.
import { expect, test } from 'bun:test'
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
