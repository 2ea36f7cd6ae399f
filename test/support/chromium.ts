// A real headless Chromium for the browser tests (API docs, playground):
// Debian's /usr/bin/chromium (.ci/run installs it) driven through
// playwright-core, which brings no browser of its own. Pages open in contexts
// that keep them on loopback: every request to another host is noted and
// aborted, so a test can assert the page asked nothing of the internet, and
// every uncaught page error is noted too.
import { existsSync } from 'node:fs'
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core'

const CHROMIUM = '/usr/bin/chromium'

/** Why the browser tests skip here, or undefined when Chromium is installed. */
export const CHROMIUM_MISSING = existsSync(CHROMIUM)
  ? undefined
  : `no Chromium at ${CHROMIUM} (apt-get install -y chromium)`

/** Headless, and nothing Chromium would fetch on its own (updates, sync, QUIC probes). */
const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** Starts Chromium; close() it after the tests. Only where CHROMIUM_MISSING is undefined. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
}

/** Whether a URL stays on this machine (or in the page: data:, blob:, about:). */
export function isLoopback(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return true
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]'
}

/** What pages did that they should not: requests off loopback, uncaught errors. */
export interface PageFaults {
  /** Every URL a page asked for that was not on loopback (aborted). */
  outside: string[]
  /** The message of every error a page threw and did not catch. */
  errors: string[]
}

/**
 * A new page in a context of its own (`options`: viewport, ...) that notes
 * its faults in `faults` (new lists unless given: pass one to collect over
 * several pages). Close it with page.context().close().
 */
export async function loopbackPage(
  browser: Browser,
  options: BrowserContextOptions = {},
  faults: PageFaults = { outside: [], errors: [] },
): Promise<PageFaults & { page: Page }> {
  const context = await browser.newContext(options)
  // Every request the page starts, even one its CSP then blocks, is seen here.
  context.on('request', (request) => {
    if (!isLoopback(request.url())) faults.outside.push(request.url())
  })
  // And none that is off loopback ever reaches the network.
  await context.route('**/*', (route) =>
    isLoopback(route.request().url()) ? route.continue() : route.abort(),
  )
  const page = await context.newPage()
  page.on('pageerror', (error) => faults.errors.push(error.message))
  return { page, ...faults }
}
