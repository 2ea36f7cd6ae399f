// Attachments in the playground (CONTRACT §20), in a real headless Chromium
// against the real application on loopback: an image attached with the 📎
// button and a text file dropped on the composer go through the upload flow,
// wait as chips, and go with the message; the sent message shows the image
// as a thumbnail (loaded from its download URL) and the document by name,
// also after a reload; the stored message carries both as chatgpt.com keeps
// them. The model is the local one with `vision: true`, so images are taken.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { embeddedBackend } from '../support/backends.ts'
import {
  CHROMIUM_MISSING,
  launchChromium,
  loopbackPage,
  type PageFaults,
} from '../support/chromium.ts'
import { conversationApp, get, newUser, type TestApp } from '../support/conversation-app.ts'
import { png } from '../support/sample-files.ts'

if (CHROMIUM_MISSING) console.log(`playground attachments test skipped: ${CHROMIUM_MISSING}`)

const TIMEOUT = { timeout: 20_000 }

describe.skipIf(CHROMIUM_MISSING !== undefined)('the playground attaches files', () => {
  let browser: Browser
  let t: TestApp
  let server: ReturnType<TestApp['app']['listen']>
  let base: string
  const faults: PageFaults = { outside: [], errors: [] }

  beforeAll(async () => {
    t = await conversationApp({
      backend: embeddedBackend,
      env: { MODELS: JSON.stringify([{ slug: 'local-eyes', provider: 'local', vision: true }]) },
    })
    server = t.app.listen({ port: 0, hostname: '127.0.0.1' })
    base = `http://127.0.0.1:${server.server?.port}`
    browser = await launchChromium()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await t?.conversations.whenIdle()
    await server?.stop()
  })

  /** Drops a file named `name` holding `text` on the composer, as a person dragging it would. */
  async function dropText(page: Page, name: string, text: string) {
    const transfer = await page.evaluateHandle(
      ([fileName, body]) => {
        // This file has no DOM types: the page's DataTransfer, as the page sees it.
        const { DataTransfer: PageDataTransfer } = globalThis as unknown as {
          DataTransfer: new () => { items: { add(file: File): void } }
        }
        const data = new PageDataTransfer()
        data.items.add(new File([body as string], fileName as string, { type: 'text/plain' }))
        return data
      },
      [name, text],
    )
    await page.dispatchEvent('#composer-area', 'drop', { dataTransfer: transfer })
  }

  test('an image by the button and a text file by drag-and-drop go with the message and show in it', async () => {
    const { page } = await loopbackPage(browser, { viewport: { width: 1280, height: 800 } }, faults)
    await page.goto(`${base}/playground`)
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    const user = newUser()
    await page.fill('#user-id', user)
    await page.click('#use-identity')

    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.click('#attach')])
    await chooser.setFiles({
      name: 'dot.png',
      mimeType: 'image/png',
      buffer: Buffer.from(png(4, 3)),
    })
    await page.locator('.attachment-chip', { hasText: 'dot.png' }).waitFor(TIMEOUT)
    await dropText(page, 'notes.txt', 'Remember the milk.')
    await page.locator('.attachment-chip', { hasText: 'notes.txt' }).waitFor(TIMEOUT)

    await page.fill('#prompt', 'Look at these')
    await page.click('#send')
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    expect(await page.locator('.attachment-chip').count()).toBe(0)

    const sent = page.locator('#messages li.user').last()
    const thumbnail = sent.locator('img.thumbnail')
    await thumbnail.waitFor(TIMEOUT)
    // The image loaded from its download URL (naturalWidth is 0 until it does).
    await page.waitForFunction(
      () => {
        const img = (
          globalThis as unknown as { document: { querySelector(s: string): unknown } }
        ).document.querySelector('#messages li.user img.thumbnail') as { naturalWidth: number }
        return img?.naturalWidth === 4
      },
      undefined,
      TIMEOUT,
    )
    expect(await thumbnail.getAttribute('alt')).toBe('dot.png')
    expect(await sent.locator('.document').textContent()).toContain('notes.txt')
    expect(await sent.locator('.text').textContent()).toBe('Look at these')
    // The local model read the document's text.
    expect(await page.locator('#messages li.assistant').last().textContent()).toContain(
      'Remember the milk.',
    )

    // Stored as chatgpt.com keeps it, and shown the same after a reload.
    const id = /#c=([0-9a-f-]{36})/.exec(page.url())?.[1] ?? ''
    const detail = (await (
      await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
    ).json()) as {
      mapping: Record<
        string,
        { message: { content: { parts: unknown[] }; metadata: unknown } | null }
      >
    }
    const stored = Object.values(detail.mapping).find(
      (node) => (node.message?.metadata as { attachments?: unknown })?.attachments,
    )?.message
    expect(stored?.content.parts).toEqual([
      expect.objectContaining({ content_type: 'image_asset_pointer', width: 4, height: 3 }),
      'Look at these',
    ])
    expect(stored?.metadata).toMatchObject({
      attachments: [
        { name: 'dot.png', mimeType: 'image/png' },
        { name: 'notes.txt', mimeType: 'text/plain' },
      ],
    })
    await page.reload()
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    await page.locator('#messages li.user img.thumbnail').waitFor(TIMEOUT)
    expect(await page.locator('#messages li.user .document').textContent()).toContain('notes.txt')
    await page.context().close()
    expect(faults).toEqual({ outside: [], errors: [] })
  }, 90_000)
})
