// Checks one dependency (database, cache) for a health endpoint: never hangs
// longer than a timeout, and reduces any failure to the word `unreachable`, so
// no internal host, port or driver text is published. safeErrorMessage is for
// logs: the error's message with connection strings and passwords cut out.
// Shared by the document store and the example variants.

export type ProbeResult = { ok: true } | { ok: false; message: 'unreachable' }

/** Longest a health check waits for one dependency. */
export const PROBE_TIMEOUT_MS = 2_000
const MAX_MESSAGE_LENGTH = 160

/** An error's message without URLs or credentials, on one short line. */
export function safeErrorMessage(error: unknown): string {
  const raw = error instanceof Error ? error.message : String(error)
  const cleaned = raw
    // ioredis hides the connection error behind this sentence; say what it means.
    .replace(
      /^Reached the max retries per request limit[\s\S]*$/,
      'no connection (gave up after retrying)',
    )
    .replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>')
    .replace(/password\s*[=:]\s*\S+/gi, 'password=***')
    .replace(/\s+/g, ' ')
    .trim()
  const message = cleaned === '' ? 'unknown error' : cleaned
  return message.length > MAX_MESSAGE_LENGTH
    ? `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…`
    : message
}

/** The result of run, or a rejection once timeoutMs pass without one. */
export async function withTimeout<T>(run: () => Promise<T>, timeoutMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
  })
  try {
    return await Promise.race([run(), timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Runs check with a timeout; resolves with the outcome, never rejects. */
export async function probe(
  check: () => Promise<void>,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<ProbeResult> {
  try {
    await withTimeout(check, timeoutMs)
    return { ok: true }
  } catch {
    return { ok: false, message: 'unreachable' }
  }
}
