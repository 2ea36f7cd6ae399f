// Statement deadlines in the database server's own clock (CONTRACT §19: a
// send refused at its deadline is never stored behind its 503). A statement
// whose parameters hold STATEMENT_DEADLINE gets in its place the instant,
// in the server's clock (epoch ms), after which its caller may already have
// been answered; the SQL hands it to conduit_before() (migration 014), which
// fails the whole statement - nothing stored - when the server starts it
// later, as a frozen server does when it wakes with the statement waiting in
// its socket. One round trip where a transaction (BEGIN, the statement,
// COMMIT, each waiting for the event loop with its connection held) took
// three: under load those held connections were what sends waited for.
//
// The server's clock is read, not assumed equal to ours: a calibration
// statement is timed, and the server's clock_timestamp() placed within that
// round trip. The deadline given to the server is the caller's, less half the
// round trip (the server's clock is known no better) and less a margin, so
// that a statement started at the last allowed instant still has its answer
// back before the caller's own timer fires. The server refusing a statement
// its caller was still waiting for means the reading is off (a clock was
// stepped): it is taken again before the next such statement.

/** Stands, among a statement's parameters, for its deadline in the server's clock. */
export const STATEMENT_DEADLINE: unique symbol = Symbol('statement deadline')

/** The SQLSTATE conduit_before() fails with: the statement started past its deadline and stored nothing. */
export const STARTED_LATE = 'CD001'

/** The server's clock less ours, in ms, within ±uncertaintyMs, as read at `at` (our epoch ms). */
interface Reading {
  offsetMs: number
  uncertaintyMs: number
  at: number
}

export interface DatabaseClock {
  /**
   * The deadline to give the server for a caller answered at `localDeadlineMs`
   * (our epoch ms); reads the server's clock first when it was never read or
   * its reading is distrusted.
   */
  serverDeadline(localDeadlineMs: number): Promise<number>
  /** The server refused a statement as late while its caller still waited: read its clock again. */
  distrust(): void
}

export interface DatabaseClockOptions {
  /** Runs `SELECT` of the server's clock_timestamp() in epoch ms. */
  readServerMs: () => Promise<number>
  /** Kept off every deadline: time for the answer of a statement started just in time to arrive. */
  marginMs: number
  /** A reading is taken again in the background once this old (default 60 s). */
  refreshMs?: number
  /** Our epoch clock, in ms with fractions. */
  now?: () => number
}

/** Our wall clock, monotonic between NTP steps, to the microsecond. */
export const epochNow = () => performance.timeOrigin + performance.now()

/** A reading older than this gives way to any newer one, however rough. */
const MAX_READING_AGE_MS = 10 * 60_000

export function createDatabaseClock(options: DatabaseClockOptions): DatabaseClock {
  const { readServerMs, marginMs } = options
  const refreshMs = options.refreshMs ?? 60_000
  const now = options.now ?? epochNow
  let reading: Reading | undefined
  let reliable = false
  let inFlight: Promise<void> | undefined

  async function read(): Promise<void> {
    const sent = now()
    const serverMs = await readServerMs()
    const answered = now()
    if (!Number.isFinite(serverMs)) throw new Error(`the database's clock read as ${serverMs}`)
    const sample = {
      offsetMs: serverMs - (sent + answered) / 2,
      uncertaintyMs: (answered - sent) / 2,
      at: answered,
    }
    // The tightest recent reading wins: one taken while the event loop was
    // busy places the server's clock only roughly.
    if (
      !reliable ||
      reading === undefined ||
      sample.uncertaintyMs <= reading.uncertaintyMs ||
      answered - reading.at > MAX_READING_AGE_MS
    )
      reading = sample
    reliable = true
  }

  const refresh = () => {
    inFlight ??= read().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  return {
    async serverDeadline(localDeadlineMs) {
      if (!reliable || reading === undefined) await refresh()
      else if (now() - reading.at > refreshMs) refresh().catch(() => {})
      const { offsetMs, uncertaintyMs } = reading as Reading
      return localDeadlineMs + offsetMs - uncertaintyMs - marginMs
    },
    distrust() {
      reliable = false
    },
  }
}

/** The deadline of a database without one (the embedded one: nothing can freeze it apart from us). */
export const NO_DEADLINE = Number.MAX_SAFE_INTEGER

/** `params` with STATEMENT_DEADLINE replaced by `deadlineMs`. */
export function withDeadlineParameter(params: readonly unknown[], deadlineMs: number): unknown[] {
  return params.map((param) => (param === STATEMENT_DEADLINE ? deadlineMs : param))
}

/** Whether a statement's parameters ask for its deadline. */
export const asksForDeadline = (params: readonly unknown[]) => params.includes(STATEMENT_DEADLINE)
