// A wait that outlives an abort only by a grace: `pending` as it settles,
// unless `signal` aborts (or has) and `pending` has not settled `graceMs`
// later - then GAVE_UP. Used where an aborted turn (a stop, a shutdown) must
// not wait out a store's own retries or deadline: its log writes
// (reply-log.ts) and its final write (lifecycle.ts).

export const GAVE_UP = Symbol('gave up after an abort')

export function withinGraceOfAbort<T>(
  pending: Promise<T>,
  signal: AbortSignal,
  graceMs: number,
): Promise<T | typeof GAVE_UP> {
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const giveUp = () => {
      timer = setTimeout(() => resolve(GAVE_UP), graceMs)
    }
    if (signal.aborted) giveUp()
    else signal.addEventListener('abort', giveUp, { once: true })
    pending.then(resolve, reject).finally(() => {
      clearTimeout(timer)
      signal.removeEventListener('abort', giveUp)
    })
  })
}
