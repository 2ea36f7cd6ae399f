// The playground in a real headless Chromium (Debian's, through
// playwright-core, as the docs test drives it), against the real application
// on loopback with a slow local model: the reply grows on screen while it
// streams, Stop ends it with the text the server stored, a reload mid-reply
// resumes it to the end, buttons follow the routes the server has, the model
// picker sends and regenerates with the model picked, the custom-instructions
// dialog saves what the next reply follows, and the page asks nothing of any
// other host. (The screenshots are chat-page.test.ts's.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { embeddedBackend } from '../support/backends.ts'
import {
  CHROMIUM_MISSING,
  launchChromium,
  loopbackPage,
  type PageFaults,
} from '../support/chromium.ts'
import { conversationApp, get, newUser, type TestApp } from '../support/conversation-app.ts'
import { LONG_MESSAGE } from '../support/test-models.ts'

if (CHROMIUM_MISSING) console.log(`playground browser test skipped: ${CHROMIUM_MISSING}`)

/** LONG_MESSAGE's reply (59 chunks) takes about 5 s at this delay. */
const CHUNK_DELAY_MS = '80'
/** A question a person might ask, long enough for a reply of a few seconds. */
const QUESTION =
  'Hello! I am trying the playground. Could you explain how a reply streams from the server to ' +
  'this page, and what happens when I press stop or reload the page while you are still answering?'
const TIMEOUT = { timeout: 20_000 }
/** Two local models, so the picker has a choice. */
const MODELS = [
  { slug: 'local-echo', title: 'Local echo', provider: 'local', default: true },
  { slug: 'local-second', title: 'Second local', provider: 'local' },
]
/** A chatgpt.com conversations.json (test/support/transfer.ts describes it). */
const FIXTURE = join(import.meta.dir, '..', 'fixtures', 'chatgpt-conversations.json')

/** The page's DOM, as seen from functions that run in it (this file has no DOM types). */
type Dom = {
  document: {
    querySelector(selector: string): { textContent: string | null; className: string } | null
    body: { dataset: Record<string, string | undefined> }
  }
}

describe.skipIf(CHROMIUM_MISSING !== undefined)('playground in Chromium', () => {
  let browser: Browser
  let t: TestApp
  let server: ReturnType<TestApp['app']['listen']>
  let base: string
  /** Of every page of the file, checked by the last test. */
  const faults: PageFaults = { outside: [], errors: [] }

  beforeAll(async () => {
    t = await conversationApp({
      backend: embeddedBackend,
      env: { LOCAL_MODEL_CHUNK_DELAY_MS: CHUNK_DELAY_MS, MODELS: JSON.stringify(MODELS) },
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

  /** A fresh page signed in as a new user, ready to type. */
  async function signedIn(): Promise<{ page: Page; user: string }> {
    const { page } = await loopbackPage(browser, { viewport: { width: 1100, height: 720 } }, faults)
    await page.goto(`${base}/playground`)
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    const user = newUser()
    await page.fill('#user-id', user)
    await page.click('#use-identity')
    return { page, user }
  }

  const reply = (page: Page) => page.locator('#messages li.assistant').last()
  const replyText = async (page: Page) => (await reply(page).locator('.text').textContent()) ?? ''

  /** Waits until the streaming reply on screen is longer than `than` characters. */
  const grownPast = (page: Page, than: number) =>
    page.waitForFunction(
      (length: number) => {
        // Runs in the page: `document` is the page's.
        const { document } = globalThis as unknown as Dom
        const li = document.querySelector('#messages li.assistant.streaming .text')
        return (li?.textContent?.length ?? 0) > length
      },
      than,
      TIMEOUT,
    )

  async function send(page: Page, text: string) {
    await page.fill('#prompt', text)
    await page.click('#send')
  }

  /** The reply the server stored for the page's open conversation. */
  async function storedReply(page: Page, user: string) {
    const id = /#c=([0-9a-f-]{36})/.exec(page.url())?.[1]
    expect(id).toBeDefined()
    const detail = (await (
      await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
    ).json()) as { messages: { role: string; content: { parts: string[] } }[] }
    return detail.messages.filter((message) => message.role === 'assistant').at(-1)?.content
      .parts[0]
  }

  test('the reply grows on screen while it streams, then ends as stored', async () => {
    const { page, user } = await signedIn()
    await send(page, QUESTION)
    await grownPast(page, 0)
    const early = (await replyText(page)).length
    await grownPast(page, early + 80)
    // Still streaming: the reply grew before it ended.
    expect(await reply(page).getAttribute('class')).toContain('streaming')
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    const final = await replyText(page)
    expect(final.length).toBeGreaterThan(early + 80)
    expect(await storedReply(page, user)).toBe(final)
    // The new conversation is in the list, marked as the open one.
    await page.locator('#conversations li.current').waitFor(TIMEOUT)
    await page.context().close()
  }, 40_000)

  test('Stop ends the reply; the server stored exactly what was shown', async () => {
    const { page, user } = await signedIn()
    await send(page, LONG_MESSAGE)
    await grownPast(page, 20)
    await page.click('#stop')
    await page.locator('#status', { hasText: 'Stopped.' }).waitFor(TIMEOUT)
    expect(await reply(page).getAttribute('class')).not.toContain('streaming')
    expect(await page.locator('#stop').isHidden()).toBe(true)
    const shown = await replyText(page)
    const stored = await storedReply(page, user)
    expect(stored).toBe(shown)
    // Stopped before the end: the full echo of the 40 words never came.
    expect(shown).not.toContain('word39')
    await page.context().close()
  }, 40_000)

  test('a reload mid-reply resumes it on screen to the end', async () => {
    const { page, user } = await signedIn()
    await send(page, LONG_MESSAGE)
    await grownPast(page, 20)
    await page.reload()
    await page.locator('body[data-ready="true"]').waitFor(TIMEOUT)
    // After the reload the page finds the running reply and streams it again, still growing.
    await grownPast(page, 0)
    const resumedAt = (await replyText(page)).length
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    const final = await replyText(page)
    expect(final.length).toBeGreaterThan(resumedAt)
    expect(final).toContain('word39')
    expect(await storedReply(page, user)).toBe(final)
    // Shown once: the user's message is not repeated by the replay.
    expect(await page.locator('#messages li.user').count()).toBe(1)
    await page.context().close()
  }, 40_000)

  test('buttons follow the routes the server has (hidden when a route is missing)', async () => {
    const doc = (await (await get(t.app, '/docs/json')).json()) as {
      paths: Record<string, Record<string, { requestBody?: unknown }>>
    }
    const hasPatch = Boolean(doc.paths['/backend-api/conversation/{conversation_id}']?.patch)
    const sendSchema = JSON.stringify(doc.paths['/backend-api/f/conversation']?.post?.requestBody)
    const hasVariant = sendSchema.includes('"action"')
    const { page } = await signedIn()
    await send(page, 'short one')
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    // Rename, Archive and Delete are in the conversation's menu (⋯).
    expect(await page.locator('#conversation-menu').isVisible()).toBe(hasPatch)
    if (hasPatch) await page.click('#conversation-menu summary')
    expect(await page.locator('#rename').isVisible()).toBe(hasPatch)
    expect(await page.locator('#archive').isVisible()).toBe(hasPatch)
    expect(await page.locator('#delete').isVisible()).toBe(hasPatch)
    expect(await page.locator('#messages li.assistant button.regenerate').count()).toBe(
      hasVariant ? 1 : 0,
    )
    await page.context().close()
  }, 40_000)

  /** The stored model of each reply of the page's open conversation, in branch order. */
  async function storedModels(page: Page, user: string) {
    const id = /#c=([0-9a-f-]{36})/.exec(page.url())?.[1]
    const detail = (await (
      await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
    ).json()) as {
      mapping: Record<
        string,
        { message: { author: { role: string }; metadata: { model_slug?: string } } | null }
      >
    }
    return Object.values(detail.mapping)
      .filter((node) => node.message?.author.role === 'assistant')
      .map((node) => node.message?.metadata.model_slug)
  }

  test('the model picker lists the models; a send and a regenerate use the model picked', async () => {
    const { page, user } = await signedIn()
    // A slow re-read after each reply (a busy server): the page must not say a
    // reply is done, nor offer its buttons, before it shows what was stored.
    await page.route(/\/backend-api\/conversation\/[^/]+$/, async (route) => {
      await Bun.sleep(400)
      await route.continue()
    })
    const picker = page.locator('#model')
    await expect(picker.isVisible()).resolves.toBe(true)
    expect(await picker.locator('option').allTextContents()).toEqual(['Local echo', 'Second local'])
    expect(await picker.inputValue()).toBe('local-echo')
    await picker.selectOption('local-second')
    await send(page, 'which model answers?')
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    await expect(reply(page).locator('.model').textContent()).resolves.toBe('local-second')
    expect(await storedModels(page, user)).toEqual(['local-second'])
    // Regenerate with the other model: a sibling reply written by it.
    await picker.selectOption('local-echo')
    await reply(page).locator('button.regenerate').click()
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    await expect(reply(page).locator('.model').textContent()).resolves.toBe('local-echo')
    expect((await storedModels(page, user)).sort()).toEqual(['local-echo', 'local-second'])
    // Reopened, the conversation shows its current reply's model in the picker.
    await page.click('#new-conversation')
    expect(await picker.inputValue()).toBe('local-echo')
    await picker.selectOption('local-second')
    await page.locator('#conversations li button').first().click()
    await page.locator('#messages li.assistant').first().waitFor(TIMEOUT)
    expect(await picker.inputValue()).toBe('local-echo')
    await page.context().close()
  }, 40_000)

  test('the custom-instructions dialog saves them, and the next reply follows them', async () => {
    const { page, user } = await signedIn()
    await page.click('#instructions-open')
    const dialog = page.locator('#instructions-dialog')
    await dialog.waitFor({ state: 'visible', ...TIMEOUT })
    expect(await page.locator('#instructions-enabled').isChecked()).toBe(false)
    await page.check('#instructions-enabled')
    await page.fill('#about-user', 'I grow tomatoes on a balcony.')
    await page.fill('#about-model', 'Answer in one short sentence.')
    await expect(dialog.locator('.count').first().textContent()).resolves.toBe('29 / 1500')
    await page.click('#instructions-save')
    await dialog.waitFor({ state: 'hidden', ...TIMEOUT })
    await page.locator('#status', { hasText: 'saved and on' }).waitFor(TIMEOUT)
    const stored = (await (
      await get(t.app, '/backend-api/user_system_messages', { 'x-user-id': user })
    ).json()) as Record<string, unknown>
    expect(stored).toMatchObject({
      enabled: true,
      about_user_message: 'I grow tomatoes on a balcony.',
      about_model_message: 'Answer in one short sentence.',
    })
    // The local model says when it was given instructions.
    await send(page, 'how are my plants?')
    await page.locator('#status', { hasText: 'Done.' }).waitFor(TIMEOUT)
    expect(await replyText(page)).toContain('I am following my instructions')
    // Reopened, the dialog shows what is stored; Cancel changes nothing.
    await page.click('#instructions-open')
    await dialog.waitFor({ state: 'visible', ...TIMEOUT })
    expect(await page.inputValue('#about-user')).toBe('I grow tomatoes on a balcony.')
    await page.fill('#about-user', 'not saved')
    await page.click('#instructions-cancel')
    await dialog.waitFor({ state: 'hidden', ...TIMEOUT })
    expect(
      (
        (await (
          await get(t.app, '/backend-api/user_system_messages', { 'x-user-id': user })
        ).json()) as { about_user_message: string }
      ).about_user_message,
    ).toBe('I grow tomatoes on a balcony.')
    await page.context().close()
  }, 40_000)

  test('Import takes a chatgpt.com export and Export downloads the history', async () => {
    const { page } = await signedIn()
    await page.locator('#export').waitFor({ state: 'visible', ...TIMEOUT })
    await page.setInputFiles('#import-file', FIXTURE)
    await page.locator('#status', { hasText: 'Imported 2 conversation(s)' }).waitFor(TIMEOUT)
    await page.locator('#conversations li', { hasText: 'Weekend in Lisbon' }).click()
    // The current branch without the export's hidden system, context and tool messages.
    await page.locator('#messages li.assistant', { hasText: 'tram 28' }).waitFor(TIMEOUT)
    expect(await page.locator('#messages li').count()).toBe(4)
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')])
    expect(download.suggestedFilename()).toBe('conversations.json')
    const saved = JSON.parse(readFileSync(await download.path(), 'utf8')) as { title: string }[]
    expect(saved.map((entry) => entry.title).sort()).toEqual([
      'How do I boil an egg?',
      'Weekend in Lisbon',
    ])
    await page.context().close()
  }, 40_000)

  test('no request left loopback and the page threw nothing', () => {
    expect(faults.outside).toEqual([])
    expect(faults.errors).toEqual([])
  })
})
