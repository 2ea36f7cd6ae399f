// /docs and /redoc render the API's operations in a real headless Chromium,
// with every request going to this loopback server (no CDN, no internet).
// Needs Debian's chromium at /usr/bin/chromium (.ci/run installs it).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { embeddedBackend } from '../support/backends.ts'
import { CHROMIUM_MISSING, launchChromium, loopbackPage } from '../support/chromium.ts'
import { conversationApp, type TestApp } from '../support/conversation-app.ts'

if (CHROMIUM_MISSING) console.log(`browser.test.ts skipped: ${CHROMIUM_MISSING}`)

describe.skipIf(CHROMIUM_MISSING !== undefined)('docs pages in Chromium', () => {
  let browser: Browser
  let server: ReturnType<TestApp['app']['listen']>
  let base: string

  beforeAll(async () => {
    // The real APP_VARIANT=full application (src/app.ts). The pages read no
    // stored data, so the embedded backend is enough: it runs once.
    const { app } = await conversationApp({ backend: embeddedBackend })
    server = app.listen({ port: 0, hostname: '127.0.0.1' })
    base = `http://127.0.0.1:${server.server?.port}`
    browser = await launchChromium()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await server?.stop()
  })

  /** A new page at path; what it asked of other hosts and threw, in `outside` and `errors`. */
  async function visit(path: string) {
    const opened = await loopbackPage(browser)
    await opened.page.goto(`${base}${path}`, { waitUntil: 'load' })
    return opened
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
