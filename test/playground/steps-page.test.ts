// A reply's thinking and tool calls in the playground (CONTRACT §21), in a
// real headless Chromium against the real application on loopback. A
// streamed turn (the service's own frames: test/support/tool-turn.ts, given
// to the page as the send's answer) shows each thoughts message as a
// collapsed "Thinking" block and each call with its result as a collapsed
// "Called <tool>" block (a failed one marked) before the answer, which shows
// once; the same from the conversation's mapping after the stream and when
// it is opened again. A conversation imported through the real import route
// (user → thoughts → calls → tool answers → reply, and a second version of
// the reply) shows the same blocks, and its ‹ 1/2 › switcher moves between
// the two versions. Markup in a thought, a call or a tool's answer
// (`<img src=x onerror=…>`, <script>) runs none of it. Screenshot of the
// opened blocks: test/output/playground-steps.png.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { embeddedBackend } from '../support/backends.ts'
import {
  CHROMIUM_MISSING,
  launchChromium,
  loopbackPage,
  type PageFaults,
} from '../support/chromium.ts'
import { conversationApp, newUser, type TestApp } from '../support/conversation-app.ts'
import { TOOL_TURN, toolTurnDetail, toolTurnFrames } from '../support/tool-turn.ts'
import { chatgptConversation, detailOf, imported } from '../support/transfer.ts'

if (CHROMIUM_MISSING) console.log(`playground steps test skipped: ${CHROMIUM_MISSING}`)

const TIMEOUT = { timeout: 20_000 }
const t = TOOL_TURN

/** The page's window, as seen from functions that run in it (this file has no DOM types). */
type InPage = {
  __pwned?: number
  document: { querySelector(s: string): { textContent: string } }
  location: { protocol: string }
  localStorage: { setItem(key: string, value: string): void }
}

/** What the blocks of the shown reply say, and whether any is open. */
async function blocksOf(page: Page) {
  const blocks = page.locator('#messages li.assistant .steps details')
  return {
    summaries: await blocks.locator('summary').allTextContents(),
    open: await blocks.evaluateAll(
      (all) => all.filter((d) => (d as { open: boolean }).open).length,
    ),
    errors: await page
      .locator('#messages li.assistant .steps details.error summary')
      .allTextContents(),
  }
}

const STREAMED_SUMMARIES = [
  'Thinking',
  `Called ${t.search.tool}`,
  `Called ${t.weather.tool} (failed)`,
  'Thinking',
]

/** How many times `text` is in what the conversation shows. */
const timesShown = (page: Page, text: string) =>
  page.evaluate((wanted) => {
    const shown = (globalThis as unknown as InPage).document.querySelector('#messages').textContent
    return shown.split(wanted).length - 1
  }, text)

const pwned = (page: Page) => page.evaluate(() => (globalThis as unknown as InPage).__pwned)

describe.skipIf(CHROMIUM_MISSING !== undefined)('a reply with steps in Chromium', () => {
  let browser: Browser
  let t_: TestApp
  let server: ReturnType<TestApp['app']['listen']>
  let base: string
  const faults: PageFaults = { outside: [], errors: [] }

  beforeAll(async () => {
    t_ = await conversationApp({ backend: embeddedBackend })
    server = t_.app.listen({ port: 0, hostname: '127.0.0.1' })
    base = `http://127.0.0.1:${server.server?.port}`
    browser = await launchChromium()
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await t_?.conversations.whenIdle()
    await server?.stop()
  })

  async function signedIn(user = newUser(), hash = ''): Promise<Page> {
    const { page } = await loopbackPage(browser, { viewport: { width: 1100, height: 800 } }, faults)
    // The identity is kept in localStorage: set before the page reads it (not on about:blank).
    await page.addInitScript((id) => {
      const w = globalThis as unknown as InPage
      if (w.location.protocol === 'http:') w.localStorage.setItem('conduit.user', id)
    }, user)
    await page.goto(`${base}/playground${hash}`)
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    return page
  }

  test('a streamed turn: collapsed blocks, then the answer once; the same from its mapping', async () => {
    const page = await signedIn()
    const frames = toolTurnFrames()
    const detail = toolTurnDetail(frames)
    // The send is answered with the turn's frames; the detail the page reads
    // after it waits until the streamed view was checked.
    await page.route('**/backend-api/f/conversation', (route) =>
      route.fulfill({ contentType: 'text/event-stream', body: frames.join('') }),
    )
    let release = () => {}
    const checked = new Promise<void>((resolve) => {
      release = resolve
    })
    await page.route(`**/backend-api/conversation/${t.conversationId}`, async (route) => {
      await checked
      await route.fulfill({ json: detail })
    })
    await page.route(`**/backend-api/conversation/${t.conversationId}/stream_status`, (route) =>
      route.fulfill({ json: { streaming: false } }),
    )
    await page.fill('#prompt', t.question)
    await page.click('#send')
    // The stream has ended; the page now waits for the stored detail.
    await page.locator('#status', { hasText: 'Refreshing' }).waitFor(TIMEOUT)
    const reply = page.locator(`#messages li.assistant[data-id="${t.replyId}"]`)
    await expect(reply.locator('.text').textContent()).resolves.toBe(t.answer.join(''))
    expect(await blocksOf(page)).toEqual({
      summaries: STREAMED_SUMMARIES,
      open: 0,
      errors: [`Called ${t.weather.tool} (failed)`],
    })
    expect(await timesShown(page, t.answer.join(''))).toBe(1)
    release()
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    // From the mapping: the same blocks in the same reply, the user message before it.
    expect(await blocksOf(page)).toEqual({
      summaries: STREAMED_SUMMARIES,
      open: 0,
      errors: [`Called ${t.weather.tool} (failed)`],
    })
    expect(await page.locator('#messages > li').count()).toBe(2)
    expect(await timesShown(page, t.answer.join(''))).toBe(1)
    // One version of each message: no switcher.
    expect(await page.locator('#messages .branches').count()).toBe(0)
    // Opened again later, from the list's link: the same.
    await page.goto('about:blank')
    await page.goto(`${base}/playground#c=${t.conversationId}`)
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    await reply.waitFor(TIMEOUT)
    expect((await blocksOf(page)).summaries).toEqual(STREAMED_SUMMARIES)
    // Opened, a block shows its text: a thought as Markdown, a call and its answer as text.
    const steps = reply.locator('.steps details')
    await steps.nth(0).locator('summary').click()
    await expect(steps.nth(0).locator('strong').textContent()).resolves.toBe('search')
    await steps.nth(1).locator('summary').click()
    await expect(steps.nth(1).locator('.step-args pre').textContent()).resolves.toBe(t.search.args)
    await expect(steps.nth(1).locator('.step-result pre').textContent()).resolves.toBe(
      t.searchResult,
    )
    await steps.nth(2).locator('summary').click()
    await expect(steps.nth(2).locator('.step-result pre').textContent()).resolves.toBe(
      t.weatherError,
    )
    await expect(steps.nth(2).locator('.step-label').allTextContents()).resolves.toEqual([
      'Arguments',
      'Error',
    ])
    // The tool's markup is text, not elements; the thought's img lost its handler.
    expect(await reply.locator('.step-result script, .step-result img').count()).toBe(0)
    expect(await reply.locator('[onerror]').count()).toBe(0)
    expect(await pwned(page)).toBeUndefined()
    await page.screenshot({ path: join(import.meta.dir, '..', 'output', 'playground-steps.png') })
    await page.context().close()
  }, 40_000)

  test('an imported conversation: its blocks, and the switcher between two versions of the reply', async () => {
    const user = newUser()
    const cid = crypto.randomUUID()
    const hostile = 'Result: <img src=x onerror="window.__pwned = 8">'
    const conversation = chatgptConversation(
      cid,
      [
        { id: 'q', role: 'user', text: 'Search my notes.' },
        {
          id: 'think',
          role: 'assistant',
          message: {
            content: {
              content_type: 'thoughts',
              thoughts: [
                {
                  summary: 'Thinking',
                  content: 'Look in the *notes*.',
                  chunks: [],
                  finished: true,
                },
              ],
              source_analysis_msg_id: 'think',
            },
            channel: 'analysis',
          },
        },
        {
          id: 'call',
          role: 'assistant',
          message: {
            content: { content_type: 'code', language: 'json', text: '{"query":"notes"}' },
            recipient: 'document_search',
            end_turn: false,
          },
        },
        {
          id: 'result',
          role: 'tool',
          message: {
            author: { role: 'tool', name: 'document_search', metadata: {} },
            content: { content_type: 'execution_output', text: hostile },
          },
        },
        { id: 'answer', role: 'assistant', text: 'The notes say hello.' },
        { id: 'answer-b', role: 'assistant', parent: 'q', text: 'Another version.' },
      ],
      { title: 'Imported steps', current_node: 'answer' },
    )
    const report = await imported(t_.app, user, JSON.stringify([conversation]))
    expect(report).toEqual({ imported: 1, skipped: [] })
    // What the page is given: the steps between the question and the answer.
    const stored = await detailOf(t_.app, user, cid)
    expect(stored.mapping.answer?.parent).toBe('result')
    const page = await signedIn(user, `#c=${cid}`)
    const reply = page.locator('#messages li.assistant')
    await reply.first().waitFor(TIMEOUT)
    expect(await reply.count()).toBe(1)
    expect(await blocksOf(page)).toEqual({
      summaries: ['Thinking', 'Called document_search'],
      open: 0,
      errors: [],
    })
    await expect(reply.locator('.text').textContent()).resolves.toBe('The notes say hello.')
    await reply.locator('.steps details').nth(1).locator('summary').click()
    await expect(reply.locator('.step-result pre').textContent()).resolves.toBe(hostile)
    expect(await pwned(page)).toBeUndefined()
    // The versions are those of the turn's first message: the thoughts and the other reply.
    await expect(reply.locator('.branch-count').textContent()).resolves.toBe('1/2')
    await reply.locator('button.branch-next').click()
    await page.locator('#messages li.assistant', { hasText: 'Another version.' }).waitFor(TIMEOUT)
    expect(await page.locator('#messages li.assistant .steps details').count()).toBe(0)
    await expect(reply.locator('.branch-count').textContent()).resolves.toBe('2/2')
    await reply.locator('button.branch-previous').click()
    await page
      .locator('#messages li.assistant', { hasText: 'The notes say hello.' })
      .waitFor(TIMEOUT)
    expect((await blocksOf(page)).summaries).toEqual(['Thinking', 'Called document_search'])
    expect(await page.locator('#messages > li').count()).toBe(2)
    await page.context().close()
  }, 40_000)

  test('no request left loopback and the page threw nothing', () => {
    expect(faults.outside).toEqual([])
    expect(faults.errors).toEqual([])
  })
})
