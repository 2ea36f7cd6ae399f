// /docs and /redoc render the API's operations in a real headless Chromium,
// with every request going to this loopback server (no CDN, no internet).
// Needs Debian's chromium at /usr/bin/chromium (.ci/run installs it).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { type Browser, chromium, type Page } from 'playwright-core'
import { embeddedBackend } from '../support/backends.ts'
import { conversationApp, type TestApp } from '../support/conversation-app.ts'

const CHROMIUM = '/usr/bin/chromium'
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium)
  console.log(`browser.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium)`)

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

const isLoopback = (url: string) => {
  const { protocol, hostname } = new URL(url)
  if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return true
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]'
}

interface Visit {
  page: Page
  /** Every URL the page asked for that was not on loopback. */
  outside: string[]
  errors: string[]
}

describe.skipIf(!hasChromium)('docs pages in Chromium', () => {
  let browser: Browser
  let server: ReturnType<TestApp['app']['listen']>
  let base: string

  beforeAll(async () => {
    // The real APP_VARIANT=full application (src/app.ts). The pages read no
    // stored data, so the embedded backend is enough: it runs once.
    const { app } = await conversationApp({ backend: embeddedBackend })
    server = app.listen({ port: 0, hostname: '127.0.0.1' })
    base = `http://127.0.0.1:${server.server?.port}`
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  async function visit(path: string): Promise<Visit> {
    const context = await browser.newContext()
    const outside: string[] = []
    const errors: string[] = []
    // Every request the page starts, even one its CSP then blocks, is seen here.
    context.on('request', (request) => {
      if (!isLoopback(request.url())) outside.push(request.url())
    })
    // And none that is off loopback ever reaches the network.
    await context.route('**/*', (route) =>
      isLoopback(route.request().url()) ? route.continue() : route.abort(),
    )
    const page = await context.newPage()
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${base}${path}`, { waitUntil: 'load' })
    return { page, outside, errors }
  }

  /** Waits until the rendered DOM contains every text. */
  const rendered = (page: Page, texts: string[]) =>
    // A function, not a string: the pages' CSP forbids eval. It runs in the
    // page, where `document` exists (this file is compiled without DOM types).
    page.waitForFunction(
      (wanted: string[]) => {
        const win = globalThis as unknown as { document: { body: { textContent: string | null } } }
        const text = win.document.body.textContent ?? ''
        return wanted.every((item) => text.includes(item))
      },
      texts,
      { timeout: 20_000 },
    )

  test('/docs (Swagger UI) renders every operation', async () => {
    const { page, outside, errors } = await visit('/docs')
    await rendered(page, [
      '/documents',
      '/query',
      '/cache',
      '/health',
      'Store a document',
      '/backend-api/f/conversation',
    ])
    expect(await page.locator('.opblock').count()).toBeGreaterThanOrEqual(10)
    await page.context().close()
    expect(outside).toEqual([])
    expect(errors).toEqual([])
  }, 40_000)

  test('/redoc (ReDoc) renders every operation', async () => {
    const { page, outside, errors } = await visit('/redoc')
    await rendered(page, [
      '/documents',
      '/query',
      'Store a document unless its content is already stored',
    ])
    expect(
      await page.locator('[data-section-id^="tag/"], [data-section-id^="operation/"]').count(),
    ).toBeGreaterThan(0)
    await page.context().close()
    expect(outside).toEqual([])
    expect(errors).toEqual([])
  }, 40_000)
})
