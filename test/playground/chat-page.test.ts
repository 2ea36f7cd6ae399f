// The playground as a person uses it, in a real headless Chromium at a
// phone's width (390 px) and a desktop's (1280 px), against the real
// application on loopback with a scripted model of this file's: the page
// never scrolls sideways and the prompt box keeps its room, the list is a
// drawer on the phone, replies are Markdown (a heading, a list, a code block,
// a table) and a reply holding `<img src=x onerror=…>`, a <script> and a
// javascript: link runs none of it (nor does a user's own markup), a regenerate and an edit each leave a
// ‹ 1/2 › switcher that shows either branch (and a send follows the branch
// shown), Stop marks the reply as stopped, the edit and rename dialogs send
// what was typed, feedback and copy work, search finds a conversation, and
// dark mode follows the system. Screenshots: test/output/playground.png
// (1280 px) and test/output/playground-phone.png (390 px), copied to docs/
// for the README.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { splitIntoChunks } from '../../src/conversation/model/local.ts'
import type { ModelProvider, ModelRequest } from '../../src/conversation/model/provider.ts'
import { embeddedBackend } from '../support/backends.ts'
import {
  CHROMIUM_MISSING,
  launchChromium,
  loopbackPage,
  type PageFaults,
} from '../support/chromium.ts'
import { conversationApp, get, newUser, type TestApp } from '../support/conversation-app.ts'

if (CHROMIUM_MISSING) console.log(`playground chat-page test skipped: ${CHROMIUM_MISSING}`)

const OUTPUT = join(import.meta.dir, '..', 'output')
const TIMEOUT = { timeout: 20_000 }
const PHONE = { width: 390, height: 844 }
const DESKTOP = { width: 1280, height: 800 }

/** Asked for, the model answers with MARKDOWN (numbered: each answer to it says which it is). */
const MARKDOWN_QUESTION = 'How does a reply get from the server to this page?'
const MARKDOWN = `## How a reply streams

The server sends the reply as **Server-Sent Events**; the page reads them with \`fetch\` and shows the text as it grows.

1. The message is stored.
2. The model streams its answer in chunks.
3. Each chunk is appended to the reply, here and in the database.

\`\`\`ts
const response = await fetch('/backend-api/f/conversation', { method: 'POST', body })
for await (const event of sseEvents(response.body)) applyEvent(turn, event)
\`\`\`

| Button | What it does |
| --- | --- |
| Stop | ends the reply, kept as it was shown |
| ‹ › | shows another version of a message |
`
/** A model's reply that would run script if the page trusted it. */
const HOSTILE =
  'Here you go: <img src=x onerror="window.__pwned = 1"> and <script>window.__pwned = 2</script> ' +
  'and [a link](javascript:window.__pwned=3) and <a href="#" onclick="window.__pwned=4">another</a>.'
/** Asked for, the model answers HOSTILE. */
const HOSTILE_QUESTION = 'Show me an image.'
/** A message starting with this gets a reply that waits, after its first words, until stopped. */
const HOLD = 'Take your time:'

/**
 * The scripted model: MARKDOWN or HOSTILE for their questions, a reply that
 * holds for HOLD, else `Answer <n> to "<message>".`; MARKDOWN and the
 * answers carry the number of the call (counted over the file), so a
 * regenerated reply differs.
 */
function scriptedModel(): ModelProvider {
  let calls = 0
  return {
    slug: 'scripted',
    async *stream(request: ModelRequest) {
      calls += 1
      const asked = request.messages.filter((message) => message.role === 'user').at(-1)?.content
      if (asked?.startsWith(HOLD)) {
        yield 'Let me think about that '
        yield 'for a while… '
        // Held until the turn is stopped (its signal aborts).
        await new Promise<void>((resolve) => {
          if (request.signal?.aborted) resolve()
          request.signal?.addEventListener('abort', () => resolve(), { once: true })
        })
        return
      }
      const text =
        asked === MARKDOWN_QUESTION
          ? `${MARKDOWN}\n_Version ${calls}._`
          : asked === HOSTILE_QUESTION
            ? HOSTILE
            : `Answer ${calls} to "${asked}".`
      for (const chunk of splitIntoChunks(text)) yield chunk
    },
  }
}

/** The page's window and DOM, as seen from functions that run in it (this file has no DOM types). */
type InPage = {
  __pwned?: number
  innerWidth: number
  document: {
    documentElement: { scrollWidth: number }
    body: { scrollWidth: number }
  }
  getComputedStyle(element: unknown): { backgroundColor: string }
  navigator: { clipboard: { readText(): Promise<string> } }
}

/** Widths of the document against the window's, as the page measures them. */
const widths = (page: Page) =>
  page.evaluate(() => {
    const w = globalThis as unknown as InPage
    return {
      document: w.document.documentElement.scrollWidth,
      body: w.document.body.scrollWidth,
      window: w.innerWidth,
    }
  })

async function expectNoSidewaysScroll(page: Page) {
  const { document, body, window } = await widths(page)
  expect(document).toBeLessThanOrEqual(window)
  expect(body).toBeLessThanOrEqual(window)
}

describe.skipIf(CHROMIUM_MISSING !== undefined)('the playground chat page in Chromium', () => {
  let browser: Browser
  let t: TestApp
  let server: ReturnType<TestApp['app']['listen']>
  let base: string
  /** Of every page of the file, checked by the last test. */
  const faults: PageFaults = { outside: [], errors: [] }

  beforeAll(async () => {
    t = await conversationApp({ backend: embeddedBackend, model: scriptedModel() })
    server = t.app.listen({ port: 0, hostname: '127.0.0.1' })
    base = `http://127.0.0.1:${server.server?.port}`
    browser = await launchChromium()
    mkdirSync(OUTPUT, { recursive: true })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await t?.conversations.whenIdle()
    await server?.stop()
  })

  /** A fresh page at this size, loaded and ready (no one signed in yet). */
  async function openPage(viewport: { width: number; height: number }, colorScheme = 'light') {
    const { page } = await loopbackPage(
      browser,
      { viewport, colorScheme: colorScheme as 'light' | 'dark' },
      faults,
    )
    await page.goto(`${base}/playground`)
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    return page
  }

  async function signIn(page: Page) {
    const user = newUser()
    await page.fill('#user-id', user)
    await page.click('#use-identity')
    return user
  }

  /** Sends `text` and waits until the page shows the reply the server stored. */
  async function sendAndWait(page: Page, text: string, status = 'Done.') {
    await page.fill('#prompt', text)
    await page.click('#send')
    await page.locator('#status', { hasText: status }).waitFor(TIMEOUT)
  }

  const conversationIdOf = (page: Page) => /#c=([0-9a-f-]{36})/.exec(page.url())?.[1] ?? ''

  type Detail = {
    title: string
    current_node: string
    mapping: Record<
      string,
      {
        parent: string | null
        children: string[]
        message: {
          author: { role: string }
          content: { parts: string[] }
          metadata: { finish_details?: { type: string } }
        } | null
      }
    >
  }
  async function storedDetail(page: Page, user: string): Promise<Detail> {
    const response = await get(t.app, `/backend-api/conversation/${conversationIdOf(page)}`, {
      'x-user-id': user,
    })
    return (await response.json()) as Detail
  }

  const reply = (page: Page) => page.locator('#messages li.assistant').last()

  test('at 390 px: a drawer for the list, a wide prompt box, Markdown, and no sideways scroll', async () => {
    const page = await openPage(PHONE)
    // Nobody signed in yet: the drawer is open where one chooses a user.
    const sidebar = page.locator('#sidebar')
    await sidebar.waitFor({ state: 'visible', ...TIMEOUT })
    await expectNoSidewaysScroll(page)
    await signIn(page)
    await sidebar.waitFor({ state: 'hidden', ...TIMEOUT })
    const prompt = await page.locator('#prompt').boundingBox()
    expect(prompt?.width).toBeGreaterThanOrEqual(250)
    await expect(page.locator('#menu-toggle').isVisible()).resolves.toBe(true)

    await sendAndWait(page, MARKDOWN_QUESTION)
    const markdown = reply(page).locator('.markdown')
    expect(await markdown.locator('h2').textContent()).toBe('How a reply streams')
    expect(await markdown.locator('ol > li').count()).toBe(3)
    expect(await markdown.locator('pre > code').textContent()).toContain('for await (const event')
    expect(await markdown.locator('table th').allTextContents()).toEqual(['Button', 'What it does'])
    expect(await markdown.locator('strong').textContent()).toBe('Server-Sent Events')
    // The code block's long line scrolls inside its box, not the page.
    await expectNoSidewaysScroll(page)
    await page.screenshot({ path: join(OUTPUT, 'playground-phone.png') })

    // The menu button opens the list; picking a conversation closes it again.
    await page.click('#menu-toggle')
    await sidebar.waitFor({ state: 'visible', ...TIMEOUT })
    await expectNoSidewaysScroll(page)
    await page.locator('#conversations li button').first().click()
    await sidebar.waitFor({ state: 'hidden', ...TIMEOUT })
    await reply(page).locator('h2').waitFor(TIMEOUT)
    await expectNoSidewaysScroll(page)
    await page.context().close()
  }, 60_000)

  test('at 1280 px the list stays beside the chat, with no sideways scroll', async () => {
    const page = await openPage(DESKTOP)
    await signIn(page)
    await expect(page.locator('#sidebar').isVisible()).resolves.toBe(true)
    await expect(page.locator('#menu-toggle').isVisible()).resolves.toBe(false)
    await sendAndWait(page, MARKDOWN_QUESTION)
    await reply(page).locator('.markdown pre > code').waitFor(TIMEOUT)
    await expectNoSidewaysScroll(page)
    const prompt = await page.locator('#prompt').boundingBox()
    expect(prompt?.width).toBeGreaterThanOrEqual(500)
    await page.context().close()
  }, 60_000)

  test('a reply with <img onerror>, <script> and javascript: links runs none of it', async () => {
    const page = await openPage(DESKTOP)
    await signIn(page)
    await sendAndWait(page, HOSTILE_QUESTION)
    const text = reply(page).locator('.markdown')
    await expect(text.textContent()).resolves.toContain('Here you go:')
    // The image stays, without its handler; the script and the javascript: link are gone.
    expect(await text.locator('img').count()).toBe(1)
    expect(await page.locator('[onerror], [onclick], #messages script').count()).toBe(0)
    expect(await page.locator('#messages a[href^="javascript" i]').count()).toBe(0)
    // The broken image has had its chance to fail (and fire onerror, had it one).
    await page.waitForFunction(
      () =>
        (
          globalThis as unknown as {
            document: { querySelector(s: string): { complete: boolean } | null }
          }
        ).document.querySelector('#messages li.assistant img')?.complete === true,
      undefined,
      TIMEOUT,
    )
    await page.locator('#messages li.assistant a', { hasText: 'another' }).click()
    const pwned = await page.evaluate(() => (globalThis as unknown as InPage).__pwned)
    expect(pwned).toBeUndefined()
    // A user's own markup is shown as the text they typed, and its echo in the reply is cleaned.
    const typed =
      '<img src=y onerror="window.__pwned = 5"> <b onmouseover="window.__pwned = 6">hi</b>'
    await sendAndWait(page, typed)
    const question = page.locator('#messages > li.user').last()
    await expect(question.locator('.text').textContent()).resolves.toBe(typed)
    expect(await question.locator('img, b').count()).toBe(0)
    await reply(page).locator('.markdown b', { hasText: 'hi' }).hover()
    expect(await page.locator('[onerror], [onmouseover]').count()).toBe(0)
    // Reopened from the server, the stored replies are rendered as safely.
    await page.reload()
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    await reply(page)
      .locator('.markdown img')
      .waitFor({ state: 'attached', ...TIMEOUT })
    expect(await page.locator('[onerror], [onclick], #messages script').count()).toBe(0)
    expect(await page.evaluate(() => (globalThis as unknown as InPage).__pwned)).toBeUndefined()
    await page.context().close()
  }, 60_000)

  test('a regenerate and an edit each leave a ‹ n/m › switcher that shows either branch', async () => {
    const page = await openPage(DESKTOP)
    const user = await signIn(page)
    await sendAndWait(page, MARKDOWN_QUESTION)
    // The model numbers its answers over the whole file: this one's and the regenerated one's.
    const version = async () => (await reply(page).locator('.markdown em').textContent()) ?? ''
    const firstVersion = await version()
    const n = Number(/^Version (\d+)\.$/.exec(firstVersion)?.[1])
    const secondVersion = `Version ${n + 1}.`
    expect(await page.locator('.branches').count()).toBe(0)

    // Regenerate: the new reply is shown as 2/2; ‹ shows the first again, › the second.
    await reply(page).locator('button.regenerate').click()
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    const count = reply(page).locator('.branch-count')
    await expect(count.textContent()).resolves.toBe('2/2')
    await expect(version()).resolves.toBe(secondVersion)
    expect(await reply(page).locator('button.branch-next').isDisabled()).toBe(true)
    await reply(page).locator('button.branch-previous').click()
    await expect(count.textContent()).resolves.toBe('1/2')
    await expect(version()).resolves.toBe(firstVersion)
    expect(await reply(page).locator('button.branch-previous').isDisabled()).toBe(true)
    await reply(page).locator('button.branch-next').click()
    await expect(count.textContent()).resolves.toBe('2/2')
    await expect(version()).resolves.toBe(secondVersion)
    await page.screenshot({ path: join(OUTPUT, 'playground.png') })

    // Edit in the dialog (several lines): sent as a new branch from the same place.
    const question = page.locator('#messages li.user').first()
    await question.locator('button.edit').click()
    const dialog = page.locator('#edit-dialog')
    await dialog.waitFor({ state: 'visible', ...TIMEOUT })
    expect(await dialog.locator('textarea').inputValue()).toBe(MARKDOWN_QUESTION)
    await dialog.locator('textarea').fill('Tell me about tomatoes.\nOnly the short version.')
    await dialog.locator('button.save').click()
    await dialog.waitFor({ state: 'hidden', ...TIMEOUT })
    // The dialog closes before the send starts: the regenerate's "Done." may still show until then.
    await question.locator('.branch-count', { hasText: '2/2' }).waitFor(TIMEOUT)
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    expect(await page.locator('#messages > li').count()).toBe(2)
    await expect(question.locator('.text').textContent()).resolves.toBe(
      'Tell me about tomatoes.\nOnly the short version.',
    )
    await expect(reply(page).locator('.text').textContent()).resolves.toMatch(
      /^Answer \d+ to "Tell me about tomatoes\./,
    )
    // Back to the first question: its branch comes back with the reply last shown there.
    await question.locator('button.branch-previous').click()
    await expect(question.locator('.branch-count').textContent()).resolves.toBe('1/2')
    await expect(question.locator('.text').textContent()).resolves.toBe(MARKDOWN_QUESTION)
    await expect(version()).resolves.toBe(secondVersion)
    await expect(reply(page).locator('.branch-count').textContent()).resolves.toBe('2/2')

    // A send follows the branch shown, not the server's newest one.
    const shownReply = await reply(page).getAttribute('data-id')
    await sendAndWait(page, 'And then?')
    const detail = await storedDetail(page, user)
    const followUp = Object.values(detail.mapping).find(
      (node) => node.message?.content.parts[0] === 'And then?',
    )
    expect(followUp?.parent).toBe(shownReply)
    expect(await page.locator('#messages > li').count()).toBe(4)
    // The tree as stored: two questions at the top, two replies under the first.
    const root = detail.mapping['client-created-root']
    expect(root?.children.length).toBe(2)
    const first = detail.mapping[root?.children[0] ?? '']
    expect(first?.children.length).toBe(2)
    await page.context().close()
  }, 60_000)

  test('Stop marks the reply as stopped, also when the conversation is opened again', async () => {
    const page = await openPage(DESKTOP)
    const user = await signIn(page)
    await page.fill('#prompt', `${HOLD} what is the best soil?`)
    await page.click('#send')
    await reply(page).locator('.text', { hasText: 'for a while' }).waitFor(TIMEOUT)
    await page.click('#stop')
    await page.locator('#status', { hasText: 'Stopped.' }).waitFor(TIMEOUT)
    await expect(reply(page).locator('.outcome').textContent()).resolves.toBe('Stopped')
    const detail = await storedDetail(page, user)
    expect(detail.mapping[detail.current_node]?.message?.metadata.finish_details?.type).toBe(
      'interrupted',
    )
    await page.click('#new-conversation')
    expect(await page.locator('#messages > li').count()).toBe(0)
    await page.locator('#conversations li button').first().click()
    await expect(reply(page).locator('.outcome').textContent()).resolves.toBe('Stopped')
    expect(await reply(page).getAttribute('class')).toContain('stopped')
    await page.context().close()
  }, 60_000)

  test('rename in a dialog, feedback, copy and search', async () => {
    const page = await openPage(DESKTOP)
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base })
    const user = await signIn(page)
    await sendAndWait(page, 'Which tomato grows best on a balcony?')
    const replyId = (await reply(page).getAttribute('data-id')) ?? ''
    const stored = async () =>
      (
        await t.db.query<{ rating: string }>(
          'SELECT rating FROM message_feedback WHERE message_id = $1',
          [replyId],
        )
      ).map((row) => row.rating)

    // Thumbs up, then down: the second replaces the first.
    await reply(page).locator('button.thumbs-up').click()
    await page.locator('#status', { hasText: 'Thanks for the feedback.' }).waitFor(TIMEOUT)
    expect(await reply(page).locator('button.thumbs-up').getAttribute('aria-pressed')).toBe('true')
    expect(await stored()).toEqual(['thumbsUp'])
    await reply(page).locator('button.thumbs-down').click()
    await page
      .locator('#messages li.assistant button.thumbs-down[aria-pressed="true"]')
      .waitFor(TIMEOUT)
    expect(await reply(page).locator('button.thumbs-up').getAttribute('aria-pressed')).toBe('false')
    expect(await stored()).toEqual(['thumbsDown'])

    // Copy puts the reply's text on the clipboard.
    await reply(page).locator('button.copy').click()
    await reply(page).locator('button.copy[title="Copied"]').waitFor(TIMEOUT)
    const copied = await page.evaluate(() =>
      (globalThis as unknown as InPage).navigator.clipboard.readText(),
    )
    expect(copied).toMatch(/^Answer \d+ to "Which tomato grows best on a balcony\?"\.$/)
    const detail = await storedDetail(page, user)
    expect(copied).toBe(detail.mapping[replyId]?.message?.content.parts[0] ?? '')

    // Rename in the dialog: the title, the list and the server agree.
    await page.click('#conversation-menu summary')
    await page.click('#rename')
    const dialog = page.locator('#rename-dialog')
    await dialog.waitFor({ state: 'visible', ...TIMEOUT })
    expect(await dialog.locator('input').inputValue()).toBe('Which tomato grows best on a balcony?')
    await dialog.locator('input').fill('Balcony tomatoes')
    await dialog.locator('button.save').click()
    await dialog.waitFor({ state: 'hidden', ...TIMEOUT })
    await page
      .locator('#conversations li.current', { hasText: 'Balcony tomatoes' })
      .waitFor(TIMEOUT)
    expect(await page.locator('#title').textContent()).toBe('Balcony tomatoes')
    expect((await storedDetail(page, user)).title).toBe('Balcony tomatoes')
    // Cancel changes nothing.
    await page.click('#conversation-menu summary')
    await page.click('#rename')
    await dialog.locator('input').fill('Not this')
    await dialog.locator('button.cancel').click()
    await dialog.waitFor({ state: 'hidden', ...TIMEOUT })
    expect(await page.locator('#title').textContent()).toBe('Balcony tomatoes')

    // Search: a second conversation, then a query only the first matches.
    await page.click('#new-conversation')
    await sendAndWait(page, 'What about cucumbers?')
    await expect(page.locator('#conversations li').count()).resolves.toBe(2)
    await page.fill('#search', 'TOMATO')
    const found = page.locator('#conversations li')
    await page.locator('#conversations li .snippet').first().waitFor(TIMEOUT)
    expect(await found.count()).toBe(1)
    await expect(found.locator('.list-title').textContent()).resolves.toBe('Balcony tomatoes')
    await page.fill('#search', 'no such words anywhere')
    await page.locator('#list-note', { hasText: 'Nothing holds' }).waitFor(TIMEOUT)
    expect(await found.count()).toBe(0)
    await page.fill('#search', '')
    await page.locator('#conversations li').nth(1).waitFor(TIMEOUT)
    await page.context().close()
  }, 60_000)

  test('light and dark follow the system', async () => {
    const background = async (scheme: string) => {
      const page = await openPage(PHONE, scheme)
      const color = await page.evaluate(() => {
        const w = globalThis as unknown as InPage & { document: { body: unknown } }
        return w.getComputedStyle(w.document.body).backgroundColor
      })
      await page.context().close()
      return color
    }
    // Channels of rgb(r, g, b), averaged: high for light, low for dark.
    const brightness = (color: string) => {
      const channels = (color.match(/\d+/g) ?? []).slice(0, 3).map(Number)
      return channels.reduce((sum, value) => sum + value, 0) / channels.length
    }
    expect(brightness(await background('light'))).toBeGreaterThan(200)
    expect(brightness(await background('dark'))).toBeLessThan(60)
    // A reply in the dark, for a look (test/output/playground-dark.png).
    const page = await openPage(DESKTOP, 'dark')
    await signIn(page)
    await sendAndWait(page, MARKDOWN_QUESTION)
    await page.screenshot({ path: join(OUTPUT, 'playground-dark.png') })
    await page.context().close()
  }, 60_000)

  test('no request left loopback and the page threw nothing', () => {
    expect(faults.outside).toEqual([])
    expect(faults.errors).toEqual([])
  })
})
