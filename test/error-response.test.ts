// The one mapping from domain errors to HTTP (CONTRACT §3): every kind's
// status and code, a finer code, Retry-After, Connection: close after a
// refused body, and the opaque 500 for anything else. Also that the code which finishes turns imports nothing of HTTP.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { createResumeTokens } from '../src/conversation/stream/resume-token.ts'
import { DomainError, type ErrorKind, invalid } from '../src/errors.ts'
import { toErrorResponse } from '../src/http/error-response.ts'

// A Record, so a kind added to ErrorKind without a row here fails to compile.
const EXPECTED: Record<ErrorKind, [status: number, code: string]> = {
  unauthenticated: [401, 'unauthorized'],
  forbidden: [403, 'forbidden'],
  not_found: [404, 'not_found'],
  conflict: [409, 'conflict'],
  too_large: [413, 'payload_too_large'],
  too_slow: [408, 'request_timeout'],
  invalid: [422, 'validation_error'],
  unsupported_type: [415, 'unsupported_media_type'],
  busy: [429, 'too_many_requests'],
  rate_limited: [429, 'rate_limited'],
  unavailable: [503, 'service_unavailable'],
  overloaded: [503, 'overloaded'],
}

describe('toErrorResponse', () => {
  for (const [kind, [status, code]] of Object.entries(EXPECTED))
    test(`${kind} is ${status} ${code}`, async () => {
      const response = toErrorResponse(new DomainError(kind as ErrorKind, 'A sentence.'))
      expect(response.status).toBe(status)
      expect(response.headers.get('content-type')).toStartWith('application/json')
      expect(response.headers.get('retry-after')).toBeNull()
      expect(await response.text()).toBe(`{"detail":"A sentence.","code":"${code}"}`)
    })

  test('a finer code replaces the kind’s own, the status stays', async () => {
    const response = toErrorResponse(invalid('The request body is not valid JSON.', 'invalid_json'))
    expect(response.status).toBe(422)
    expect(await response.json()).toEqual({
      detail: 'The request body is not valid JSON.',
      code: 'invalid_json',
    })
  })

  test('an answer about a body closes the connection; the others keep it', () => {
    const connection = (kind: ErrorKind) =>
      toErrorResponse(new DomainError(kind, 'A sentence.')).headers.get('connection')
    expect(connection('too_large')).toBe('close')
    expect(connection('too_slow')).toBe('close')
    for (const kind of Object.keys(EXPECTED) as ErrorKind[])
      if (kind !== 'too_large' && kind !== 'too_slow') expect(connection(kind)).toBeNull()
  })

  test('retry-after is whole seconds, rounded up, at least 1', () => {
    const retryAfter = (kind: ErrorKind, seconds: number) =>
      toErrorResponse(new DomainError(kind, 'Later.', { retryAfterSeconds: seconds })).headers.get(
        'retry-after',
      )
    expect(retryAfter('busy', 2)).toBe('2')
    expect(retryAfter('overloaded', 1)).toBe('1')
    expect(retryAfter('rate_limited', 2.1)).toBe('3')
    expect(retryAfter('rate_limited', 0.2)).toBe('1')
    expect(retryAfter('rate_limited', 0)).toBe('1')
  })

  test('anything else is an opaque 500 internal_error', async () => {
    for (const thrown of [new Error('SELECT secret FROM t'), 'a string', { status: 404 }, null]) {
      const response = toErrorResponse(thrown)
      expect(response.status).toBe(500)
      expect(response.headers.get('retry-after')).toBeNull()
      const text = await response.text()
      expect(JSON.parse(text)).toEqual({
        detail: 'Something went wrong on our side.',
        code: 'internal_error',
      })
      expect(text).not.toContain('secret')
    }
  })
})

describe('domain errors carry a kind, not a status', () => {
  test('a bad resume token is unauthenticated', async () => {
    const refusal = await createResumeTokens('a'.repeat(32))
      .verify('not.a.token')
      .catch((error: unknown) => error)
    expect(refusal).toBeInstanceOf(DomainError)
    expect(refusal).toMatchObject({ kind: 'unauthenticated' })
    expect(refusal).not.toHaveProperty('status')
  })
})

/** Every module `entry` loads at run time, following relative imports. */
function runtimeImports(entry: string): { files: string[]; packages: string[] } {
  const transpiler = new Bun.Transpiler({ loader: 'ts' })
  const files = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (files.has(file)) return
    files.add(file)
    for (const { path } of transpiler.scanImports(readFileSync(file, 'utf8')))
      if (path.startsWith('.')) visit(resolve(dirname(file), path))
      else packages.add(path)
  }
  visit(resolve(import.meta.dir, '..', entry))
  const root = resolve(import.meta.dir, '..')
  return { files: [...files].map((file) => relative(root, file)), packages: [...packages] }
}

describe('the turn runner and its steps know nothing of HTTP', () => {
  const turnDir = resolve(import.meta.dir, '../src/conversation/turn')
  const entries = [
    'src/conversation/turn/runner.ts',
    ...Array.from(
      new Bun.Glob('*.ts').scanSync(turnDir),
      (name) => `src/conversation/turn/${name}`,
    ).sort(),
  ]
  for (const entry of entries)
    test(entry, () => {
      const { files, packages } = runtimeImports(entry)
      expect(packages.filter((name) => name.includes('elysia'))).toEqual([])
      expect(files).not.toContain('src/http/error-response.ts')
      expect(files).not.toContain('src/http/error-handler.ts')
      for (const file of files)
        expect({
          file,
          http: /\bResponse\b|\bstatus:\s*\d{3}\b/.test(readFileSync(file, 'utf8')),
        }).toEqual({ file, http: false })
    })
})
