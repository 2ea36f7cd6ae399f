// The playground page: pick a user (X-User-Id) or paste a JWT, see and search
// the conversation list, open one, send and watch the reply stream in
// (rendered as Markdown, sanitised: markdown.js), stop it, regenerate or edit
// (in a dialog: dialogs.js) and move between the branches that makes
// (‹ n/m ›: tree.js), see a reply's thinking and tool calls as collapsed
// blocks (steps.js, step-view.js), rate and copy a reply, rename, archive and delete,
// pick the model (models.js) and set custom instructions (instructions.js);
// export the history as chatgpt.com's conversations.json and import one (or
// its data export zip). A reload mid-reply resumes it (stream_status, then
// /resume from the first item). Buttons for routes this server does not
// have (read from /docs/json) stay hidden. On a narrow screen the
// conversation list is a drawer behind the menu button.
import { attachmentPicker, attachmentsView, messageWithFiles } from './attachments.js'
import { askText, confirmIn } from './dialogs.js'
import { icon } from './icons.js'
import { instructionsDialog } from './instructions.js'
import { renderMarkdown } from './markdown.js'
import { modelPicker } from './models.js'
import { renderSteps } from './step-view.js'
import { shownMessages } from './steps.js'
import { applyEvent, newTurn, sseEvents } from './stream.js'
import { choosePath, pathTo, ROOT, siblingsOf, switchSibling } from './tree.js'

const API = '/backend-api'
const $ = (id) => document.getElementById(id)
const el = {
  userId: $('user-id'),
  jwt: $('jwt'),
  who: $('who'),
  search: $('search'),
  list: $('conversations'),
  listNote: $('list-note'),
  title: $('title'),
  messages: $('messages'),
  status: $('status'),
  prompt: $('prompt'),
  send: $('send'),
  stop: $('stop'),
  menu: $('conversation-menu'),
  model: $('model'),
  menuToggle: $('menu-toggle'),
  scrim: $('scrim'),
}

const state = {
  // The token lives in this tab only (sessionStorage): it survives a reload, not the browser.
  identity: {
    userId: localStorage.getItem('conduit.user') ?? '',
    jwt: sessionStorage.getItem('conduit.jwt') ?? '',
  },
  /** What this server offers beyond the basics, from its OpenAPI document. */
  features: {
    manage: false,
    variant: false,
    edit: false,
    transfer: false,
    search: false,
    feedback: false,
  },
  conversationId: undefined,
  /** The open conversation's tree (the detail's `mapping`), when the server gave one. */
  mapping: undefined,
  /** Which child is shown under each message with siblings (parent id → child id). */
  chosen: new Map(),
  /** The messages of the branch shown, top first. */
  messages: [],
  /** The rating given to each reply in this tab (the API does not read them back). */
  ratings: new Map(),
  /** The stream being read: its turn and how to stop reading it. */
  reading: undefined,
}

// --- talking to the API ----------------------------------------------------

function authHeaders() {
  const { userId, jwt } = state.identity
  if (jwt) return { authorization: `Bearer ${jwt}` }
  return userId ? { 'x-user-id': userId } : {}
}

class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.detail ?? `The server answered ${status}.`)
    this.status = status
    this.retryAfter = retryAfter
  }
}

async function call(method, path, body, extraHeaders = {}) {
  const headers = { ...authHeaders(), ...extraHeaders }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!response.ok) {
    const error = await response.json().catch(() => ({}))
    throw new ApiError(response.status, error, response.headers.get('retry-after'))
  }
  return response
}

const callJson = async (method, path, body) => (await call(method, path, body)).json()

const models = modelPicker(el.model, callJson)

const attachments = attachmentPicker(
  {
    button: $('attach'),
    input: $('attach-file'),
    list: $('attachment-list'),
    dropZone: $('composer-area'),
  },
  call,
  (text, isError) => say(text, isError),
)

function say(text, isError = false) {
  el.status.textContent = text
  el.status.classList.toggle('error', isError)
}

function explain(error) {
  if (error instanceof ApiError && error.status === 429 && error.retryAfter)
    return `${error.message} (retry in ${error.retryAfter} s)`
  return error instanceof Error ? error.message : String(error)
}

// --- what this server offers ----------------------------------------------

async function loadFeatures() {
  try {
    const doc = await (await fetch('/docs/json')).json()
    const paths = doc.paths ?? {}
    const send = paths[`${API}/f/conversation`]?.post
    const schema = resolve(doc, send?.requestBody?.content?.['application/json']?.schema)
    const fields = schema?.properties ?? {}
    state.features = {
      manage: Boolean(paths[`${API}/conversation/{conversation_id}`]?.patch),
      variant: Boolean(fields.action),
      edit: Boolean(fields.parent_message_id),
      transfer: Boolean(
        paths[`${API}/conversations/export`]?.get && paths[`${API}/conversations/import`]?.post,
      ),
      search: Boolean(paths[`${API}/conversations/search`]?.get),
      feedback: Boolean(paths[`${API}/conversation/message_feedback`]?.post),
    }
  } catch {
    // Without the document, only the basics are offered.
  }
}

function resolve(doc, schema) {
  const ref = schema?.$ref
  if (typeof ref !== 'string') return schema
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((node, key) => node?.[key], doc)
}

// --- the drawer (narrow screens) ---------------------------------------------

const narrow = window.matchMedia('(max-width: 768px)')

function setDrawer(open) {
  document.body.classList.toggle('sidebar-open', open)
  el.menuToggle.setAttribute('aria-expanded', String(open))
  el.scrim.hidden = !open
}

/** After a choice in the drawer, the chat is what a person wants to see. */
const closeDrawer = () => setDrawer(false)

// --- identity ----------------------------------------------------------------

function showIdentity() {
  const { userId, jwt } = state.identity
  el.who.textContent = jwt ? 'Signed in with a token.' : userId ? `As ${userId}.` : ''
}

function useIdentity(event) {
  event.preventDefault()
  state.identity = { userId: el.userId.value.trim(), jwt: el.jwt.value.trim() }
  localStorage.setItem('conduit.user', state.identity.userId)
  sessionStorage.setItem('conduit.jwt', state.identity.jwt)
  showIdentity()
  newConversation()
  el.search.value = ''
  void refreshList()
}

const hasIdentity = () => Boolean(state.identity.userId || state.identity.jwt)

// --- the conversation list and search ------------------------------------------

async function refreshList() {
  if (!hasIdentity()) return
  const query = el.search.value.trim()
  try {
    if (query !== '') return await showSearch(query)
    const page = await callJson('GET', `${API}/conversations?limit=50`)
    el.list.replaceChildren(...page.items.map(listItem))
    el.listNote.textContent = page.items.length === 0 ? 'No conversations yet.' : ''
  } catch (error) {
    say(explain(error), true)
  }
}

/** The conversations whose title or messages hold `query` (CONTRACT §11), with a snippet. */
async function showSearch(query) {
  const params = new URLSearchParams({ query, limit: '20' })
  const found = await callJson('GET', `${API}/conversations/search?${params}`)
  // A later keystroke may have asked again meanwhile: only its answer is shown.
  if (el.search.value.trim() !== query) return
  el.list.replaceChildren(...found.items.map(listItem))
  el.listNote.textContent = found.items.length === 0 ? `Nothing holds “${query}”.` : ''
}

let searchTimer
function onSearchInput() {
  clearTimeout(searchTimer)
  // One request once typing pauses, not one per key.
  searchTimer = setTimeout(() => void refreshList(), 250)
}

function listItem(item) {
  const li = document.createElement('li')
  li.dataset.id = item.id
  li.classList.toggle('current', item.id === state.conversationId)
  const button = document.createElement('button')
  button.type = 'button'
  const title = document.createElement('span')
  title.className = 'list-title'
  title.textContent = item.title || 'Untitled'
  button.append(title)
  if (item.snippet) {
    const snippet = document.createElement('span')
    snippet.className = 'snippet'
    snippet.textContent = item.snippet
    button.append(snippet)
  }
  const when = document.createElement('span')
  when.className = 'when'
  when.textContent = new Date(item.updated_at).toLocaleString()
  button.append(when)
  button.addEventListener('click', () => {
    closeDrawer()
    void openConversation(item.id)
  })
  li.append(button)
  return li
}

function markCurrent() {
  for (const li of el.list.children)
    li.classList.toggle('current', li.dataset.id === state.conversationId)
}

// --- one conversation --------------------------------------------------------

function setConversation(id, title) {
  if (id !== state.conversationId) {
    state.mapping = undefined
    state.chosen = new Map()
  }
  state.conversationId = id
  el.title.textContent = title ?? (id ? el.title.textContent : 'New conversation')
  history.replaceState(null, '', id ? `#c=${id}` : location.pathname)
  el.menu.hidden = !(state.features.manage && id !== undefined)
  el.menu.open = false
  markCurrent()
}

function newConversation() {
  stopReading()
  state.messages = []
  el.messages.replaceChildren()
  models.show(undefined)
  setConversation(undefined)
  say('')
  closeDrawer()
}

async function openConversation(id) {
  stopReading()
  try {
    const detail = await callJson('GET', `${API}/conversation/${id}`)
    const listed = el.list.querySelector(`li[data-id="${CSS.escape(id)}"] .list-title`)
    setConversation(id, detail.title || listed?.textContent || 'Untitled')
    const status = await callJson('GET', `${API}/conversation/${id}/stream_status`)
    const streamingId = status.streaming ? status.message_id : undefined
    // The conversation goes on with the model of its current reply.
    models.show(detail.mapping?.[detail.current_node]?.message?.metadata?.model_slug)
    showDetail(detail, streamingId)
    say('')
    // Read on in the background: the page is usable while the reply streams.
    if (status.streaming) void resume(id, status.token)
  } catch (error) {
    say(explain(error), true)
  }
}

const textOf = (message) =>
  (message.content?.parts ?? []).filter((part) => typeof part === 'string').join('')
const roleOf = (message) => message.role ?? message.author?.role ?? 'assistant'
/**
 * Text from the user or the assistant: system and context messages are not
 * shown; a turn's thoughts, calls and tool answers go with its reply (steps.js).
 */
const isShown = (message) =>
  ['user', 'assistant'].includes(roleOf(message)) && Array.isArray(message.content?.parts)

/**
 * Shows the branch of `detail` ending at the server's current node (or at
 * `leaf`), leaving out the message `hide` (a reply that a resume streams in).
 */
function showDetail(detail, hide, leaf = detail.current_node) {
  if (detail.mapping) {
    state.mapping = detail.mapping
    choosePath(state.mapping, leaf, state.chosen)
    state.messages = shownMessages(pathTo(state.mapping, leaf), isShown)
  } else {
    state.mapping = undefined
    state.messages = shownMessages(detail.messages, isShown)
  }
  el.messages.replaceChildren(
    ...state.messages.filter((message) => message.id !== hide).map(messageItem),
  )
}

/** Shows the sibling `step` places from message `id` (‹ -1, › +1), and the branch below it. */
function switchBranch(id, step) {
  if (!state.mapping || state.reading) return
  const leaf = switchSibling(state.mapping, id, step, state.chosen)
  if (!leaf) return
  state.messages = shownMessages(pathTo(state.mapping, leaf), isShown)
  el.messages.replaceChildren(...state.messages.map(messageItem))
  el.messages.querySelector(`li[data-id="${CSS.escape(id)}"]`)?.scrollIntoView({ block: 'nearest' })
}

/** How a finished reply ended, when it did not end well: shown on the reply. */
function outcomeOf(message) {
  if (message.metadata?.finish_details?.type === 'interrupted') return 'Stopped'
  if (message.status === 'finished_partial_completion') return 'Incomplete: the reply failed'
  return undefined
}

function messageItem(message) {
  const li = document.createElement('li')
  const role = roleOf(message)
  li.className = role
  li.dataset.id = message.id
  if (role === 'assistant') {
    const label = document.createElement('div')
    label.className = 'role'
    label.textContent = 'assistant'
    const slug = message.model_slug ?? message.metadata?.model_slug
    if (slug) {
      const model = document.createElement('span')
      model.className = 'model'
      model.textContent = slug
      label.append(' · ', model)
    }
    li.append(label)
  }
  const text = document.createElement('div')
  if (role === 'assistant') {
    // Its thinking and tool calls, collapsed, before the answer.
    const steps = document.createElement('div')
    steps.className = 'steps'
    renderSteps(steps, message.steps ?? [])
    li.append(steps)
    text.className = 'text markdown'
    renderMarkdown(text, textOf(message))
  } else {
    // What the user typed is shown as typed.
    text.className = 'text plain'
    text.textContent = textOf(message)
    // Its images as thumbnails, its documents by name (CONTRACT §20).
    const files = attachmentsView(message, call)
    if (files) li.append(files)
  }
  li.append(text)
  setOutcome(li, outcomeOf(message))
  li.append(messageActions(message, role))
  return li
}

function setOutcome(li, outcome) {
  li.querySelector('.outcome')?.remove()
  li.classList.toggle('stopped', outcome === 'Stopped')
  if (!outcome) return
  const badge = document.createElement('div')
  badge.className = 'outcome'
  badge.textContent = outcome
  li.querySelector('.text')?.after(badge)
}

function messageActions(message, role) {
  const actions = document.createElement('div')
  actions.className = 'message-actions'
  // A reply's versions are the siblings of its turn's first message (its first step, if any).
  const head = message.turn_head ?? message.id
  const siblings = state.mapping ? siblingsOf(state.mapping, head) : undefined
  if (siblings) actions.append(branchSwitcher(head, siblings))
  if (role === 'assistant') {
    actions.append(iconButton('copy', 'Copy', 'copy', (button) => copy(button, message)))
    if (state.features.feedback) {
      for (const [rating, name, label] of [
        ['thumbsUp', 'thumbsUp', 'Good reply'],
        ['thumbsDown', 'thumbsDown', 'Bad reply'],
      ]) {
        const button = iconButton(
          name,
          label,
          rating === 'thumbsUp' ? 'thumbs-up' : 'thumbs-down',
          () => rate(message, rating, actions),
        )
        button.dataset.rating = rating
        button.setAttribute('aria-pressed', String(state.ratings.get(message.id) === rating))
        actions.append(button)
      }
    }
    if (state.features.variant)
      actions.append(
        iconButton('regenerate', 'Regenerate', 'regenerate', () => regenerate(message)),
      )
  }
  if (role === 'user' && state.features.edit)
    actions.append(iconButton('edit', 'Edit', 'edit', () => edit(message)))
  return actions
}

function branchSwitcher(id, { index, count }) {
  const box = document.createElement('span')
  box.className = 'branches'
  const previous = iconButton('previous', 'Previous version', 'branch-previous', () =>
    switchBranch(id, -1),
  )
  previous.disabled = index === 0
  const where = document.createElement('span')
  where.className = 'branch-count'
  where.textContent = `${index + 1}/${count}`
  const next = iconButton('next', 'Next version', 'branch-next', () => switchBranch(id, 1))
  next.disabled = index === count - 1
  box.append(previous, where, next)
  return box
}

function iconButton(iconName, label, className, onClick) {
  const button = document.createElement('button')
  button.type = 'button'
  button.className = `icon-button ${className}`
  button.title = label
  button.setAttribute('aria-label', label)
  button.append(icon(iconName))
  button.addEventListener('click', () => void onClick(button))
  return button
}

/** Copies a reply's Markdown text, and says so on its button for a moment. */
async function copy(button, message) {
  const text = textOf(message)
  try {
    await navigator.clipboard.writeText(text)
    button.replaceChildren(icon('check'))
    button.title = 'Copied'
    setTimeout(() => {
      button.replaceChildren(icon('copy'))
      button.title = 'Copy'
    }, 1500)
  } catch (error) {
    say(`Could not copy: ${explain(error)}`, true)
  }
}

/** Rates a reply (CONTRACT §11: a new rating replaces the last). */
async function rate(message, rating, actions) {
  try {
    await callJson('POST', `${API}/conversation/message_feedback`, {
      conversation_id: state.conversationId,
      message_id: message.id,
      rating,
    })
    state.ratings.set(message.id, rating)
    for (const button of actions.querySelectorAll('button[data-rating]'))
      button.setAttribute('aria-pressed', String(button.dataset.rating === rating))
    say('Thanks for the feedback.')
  } catch (error) {
    say(explain(error), true)
  }
}

// --- streams -----------------------------------------------------------------

function stopReading() {
  state.reading?.abort.abort()
  state.reading = undefined
  el.stop.hidden = true
  el.send.hidden = false
}

/** Shows a reply stream as it comes; resolves when it ends or is left. */
async function readStream(response) {
  const abort = new AbortController()
  const turn = newTurn()
  state.reading = { abort, turn }
  el.stop.hidden = false
  el.send.hidden = true
  say('Replying…')
  let reply
  try {
    for await (const event of sseEvents(response.body)) {
      if (abort.signal.aborted) break
      const wasNew = state.conversationId === undefined
      if (!applyEvent(turn, event) && !(wasNew && turn.conversationId)) continue
      if (wasNew && turn.conversationId) {
        setConversation(turn.conversationId, el.prompt.dataset.sent)
        void refreshList()
      }
      for (const input of turn.inputs.splice(0)) showInput(input)
      if (turn.messageId) reply ??= replyItem(turn)
      if (reply) updateReply(reply, turn)
      if (turn.title) el.title.textContent = turn.title
    }
  } catch (error) {
    if (!abort.signal.aborted) say(`The stream broke off: ${explain(error)}`, true)
  } finally {
    if (state.reading?.abort === abort) {
      state.reading = undefined
      el.stop.hidden = true
      el.send.hidden = false
    }
  }
  if (abort.signal.aborted) return
  if (reply) {
    renderReply(reply, turn)
    reply.classList.remove('streaming')
  }
  say('Refreshing…')
  await refreshList()
  if (state.conversationId) await syncMessages()
  // Said once the page shows what the server stored: the buttons then act on it.
  say(turn.done ? finishedText(turn) : 'The stream ended early; reload to resume.', !turn.done)
}

function finishedText(turn) {
  if (turn.error) return `The reply failed: ${turn.error}`
  if (turn.finish === 'interrupted') return 'Stopped.'
  return 'Done.'
}

function showInput(message) {
  if (el.messages.querySelector(`li[data-id="${CSS.escape(message.id)}"]`)) return
  el.messages.append(messageItem(message))
}

/** The message each streaming reply on screen shows, kept up to date for its Copy button. */
const streamed = new WeakMap()

function replyItem(turn) {
  const existing = el.messages.querySelector(`li[data-id="${CSS.escape(turn.messageId)}"]`)
  existing?.remove()
  const message = {
    id: turn.messageId,
    role: 'assistant',
    content: { parts: [''] },
    model_slug: turn.modelSlug,
  }
  const li = messageItem(message)
  streamed.set(li, message)
  li.classList.add('streaming')
  el.messages.append(li)
  return li
}

/** Whether the list is scrolled to (nearly) its end, so new text should keep it there. */
const atEnd = () => el.messages.scrollHeight - el.messages.scrollTop - el.messages.clientHeight < 80

function renderReply(li, turn) {
  const follow = atEnd()
  const message = streamed.get(li)
  if (message) message.content.parts = [turn.text]
  renderSteps(li.querySelector('.steps'), turn.steps)
  renderMarkdown(li.querySelector('.text'), turn.text)
  li.dataset.status = turn.status ?? ''
  if (turn.finish) {
    li.dataset.finish = turn.finish
    setOutcome(
      li,
      turn.finish === 'interrupted'
        ? 'Stopped'
        : turn.finish === 'error'
          ? 'Incomplete: the reply failed'
          : undefined,
    )
  }
  if (follow) el.messages.scrollTop = el.messages.scrollHeight
}

/** Renders the growing reply at most once a frame: each render parses the whole text. */
function updateReply(li, turn) {
  if (li.dataset.pending) return
  li.dataset.pending = 'true'
  requestAnimationFrame(() => {
    delete li.dataset.pending
    renderReply(li, turn)
  })
}

/** Re-reads the open conversation quietly, for ids and branches after a reply. */
async function syncMessages() {
  try {
    const detail = await callJson('GET', `${API}/conversation/${state.conversationId}`)
    showDetail(detail)
  } catch {
    // The streamed view stays; the next open reads it again.
  }
}

async function resume(conversationId, token) {
  try {
    const response = await call(
      'POST',
      `${API}/f/conversation/resume`,
      { conversation_id: conversationId, offset: 0 },
      { 'x-conduit-token': token },
    )
    await readStream(response)
  } catch (error) {
    say(explain(error), true)
  }
}

// --- sending -----------------------------------------------------------------

async function sendBody(body) {
  if (!hasIdentity()) {
    say('Choose a user (or paste a JWT) first.', true)
    setDrawer(true)
    return
  }
  if (!state.identity.jwt) body.user_id = state.identity.userId
  const model = models.selected()
  if (model) body.model = model
  // At once, so that the last reply's "Done." is not read as this one's.
  say('Sending…')
  try {
    const response = await call('POST', `${API}/f/conversation`, body)
    await readStream(response)
  } catch (error) {
    say(explain(error), true)
  }
}

const userMessage = (text, id = crypto.randomUUID()) => ({
  id,
  role: 'user',
  content: { content_type: 'text', parts: [text] },
})

/** Removes the shown messages from `id` on (with it when `keep` is false). */
function cutShownBranch(id, keep) {
  const index = state.messages.findIndex((message) => message.id === id)
  if (index === -1) return
  const dropped = state.messages.splice(keep ? index + 1 : index)
  for (const message of dropped)
    el.messages.querySelector(`li[data-id="${CSS.escape(message.id)}"]`)?.remove()
}

async function send(event) {
  event.preventDefault()
  const text = el.prompt.value
  if ((text.trim() === '' && !attachments.any()) || state.reading) return
  if (attachments.busy()) {
    say('Wait for the files to finish uploading.', true)
    return
  }
  el.prompt.value = ''
  fitPrompt()
  el.prompt.dataset.sent = text.slice(0, 80)
  const files = attachments.take()
  const body = { messages: [files.length > 0 ? messageWithFiles(text, files) : userMessage(text)] }
  if (state.conversationId) {
    body.conversation_id = state.conversationId
    // The branch shown may not be the server's current one: the message follows what is shown.
    const last = state.messages.at(-1)
    if (state.features.edit && last && state.mapping?.[last.id]) body.parent_message_id = last.id
  }
  await sendBody(body)
}

async function stop() {
  if (!state.conversationId) return
  try {
    const result = await callJson('POST', `${API}/stop_conversation`, {
      conversation_id: state.conversationId,
    })
    if (!result.stopped) say('Nothing was running.')
  } catch (error) {
    say(explain(error), true)
  }
}

/** Answers an assistant message's user message again, as a sibling reply (CONTRACT §10). */
async function regenerate(reply) {
  const index = state.messages.findIndex((message) => message.id === reply.id)
  const asked = state.messages
    .slice(0, index)
    .reverse()
    .find((message) => roleOf(message) === 'user')
  if (!asked || state.reading) return
  const body = {
    conversation_id: state.conversationId,
    action: 'variant',
    messages: [userMessage(textOf(asked), asked.id)],
  }
  if (asked.parent_id) body.parent_message_id = asked.parent_id
  cutShownBranch(asked.id, true)
  await sendBody(body)
}

/** Sends an edited user message as a new branch from where the original was (CONTRACT §10). */
async function edit(original) {
  if (state.reading) return
  const text = await askText($('edit-dialog'), {
    heading: 'Edit the message',
    value: textOf(original),
  })
  if (text === undefined || state.reading) return
  cutShownBranch(original.id, false)
  await sendBody({
    conversation_id: state.conversationId,
    parent_message_id: original.parent_id ?? ROOT,
    messages: [userMessage(text)],
  })
}

// --- managing conversations (CONTRACT §11) -----------------------------------

async function patchConversation(change, done) {
  try {
    await callJson('PATCH', `${API}/conversation/${state.conversationId}`, change)
    done()
    await refreshList()
  } catch (error) {
    say(explain(error), true)
  }
}

async function rename() {
  el.menu.open = false
  const title = await askText($('rename-dialog'), {
    heading: 'Rename the conversation',
    value: el.title.textContent ?? '',
  })
  if (title === undefined) return
  await patchConversation({ title: title.trim() }, () => {
    el.title.textContent = title.trim()
  })
}

function archive() {
  el.menu.open = false
  void patchConversation({ is_archived: true }, newConversation)
}

async function remove() {
  el.menu.open = false
  const title = el.title.textContent || 'this conversation'
  if (!(await confirmIn($('confirm-dialog'), `Delete “${title}” for good?`))) return
  await patchConversation({ is_visible: false }, newConversation)
}

// --- export and import (CONTRACT §17) ------------------------------------------

/** Downloads the user's conversations.json (the whole file, then saved as a download). */
async function exportHistory() {
  if (!hasIdentity()) return say('Choose a user (or paste a JWT) first.', true)
  try {
    const blob = await (await call('GET', `${API}/conversations/export`)).blob()
    const link = document.createElement('a')
    link.href = URL.createObjectURL(blob)
    link.download = 'conversations.json'
    link.click()
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
    say('Exported.')
  } catch (error) {
    say(explain(error), true)
  }
}

/** Sends the chosen conversations.json or zip as it is, and says what was imported. */
async function importHistory() {
  const file = $('import-file').files?.[0]
  $('import-file').value = ''
  if (!file || !hasIdentity()) return
  say(`Importing ${file.name}…`)
  try {
    const response = await fetch(`${API}/conversations/import`, {
      method: 'POST',
      headers: { ...authHeaders(), 'content-type': file.type || 'application/octet-stream' },
      body: file,
    })
    const report = await response.json().catch(() => ({}))
    if (!response.ok) throw new ApiError(response.status, report)
    const skipped = report.skipped.length
      ? `; ${report.skipped.length} left out (see the response)`
      : ''
    say(`Imported ${report.imported} conversation(s)${skipped}.`)
    await refreshList()
  } catch (error) {
    say(explain(error), true)
  }
}

// --- start -------------------------------------------------------------------

/** The prompt grows with its text, up to a third of the screen. */
function fitPrompt() {
  el.prompt.style.height = 'auto'
  el.prompt.style.height = `${Math.min(el.prompt.scrollHeight + 2, window.innerHeight / 3)}px`
}

async function start() {
  el.userId.value = state.identity.userId
  el.jwt.value = state.identity.jwt
  showIdentity()
  $('identity').addEventListener('submit', useIdentity)
  $('new-conversation').addEventListener('click', newConversation)
  $('composer').addEventListener('submit', send)
  el.prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) send(event)
  })
  el.prompt.addEventListener('input', fitPrompt)
  el.stop.addEventListener('click', () => void stop())
  $('rename').addEventListener('click', () => void rename())
  $('archive').addEventListener('click', archive)
  $('delete').addEventListener('click', () => void remove())
  el.search.addEventListener('input', onSearchInput)
  el.menuToggle.addEventListener('click', () =>
    setDrawer(!document.body.classList.contains('sidebar-open')),
  )
  el.scrim.addEventListener('click', closeDrawer)
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') closeDrawer()
  })
  narrow.addEventListener('change', closeDrawer)
  instructionsDialog(
    {
      open: $('instructions-open'),
      dialog: $('instructions-dialog'),
      form: $('instructions-form'),
      enabled: $('instructions-enabled'),
      aboutUser: $('about-user'),
      aboutModel: $('about-model'),
      message: $('instructions-message'),
      cancel: $('instructions-cancel'),
    },
    callJson,
    hasIdentity,
    say,
  )
  $('export').addEventListener('click', () => void exportHistory())
  $('import').addEventListener('click', () => $('import-file').click())
  $('import-file').addEventListener('change', () => void importHistory())
  // Someone new on a phone starts where they choose who they are.
  if (!hasIdentity() && narrow.matches) setDrawer(true)
  await Promise.all([loadFeatures(), models.load()])
  $('transfer').hidden = !state.features.transfer
  el.search.hidden = !state.features.search
  document.body.dataset.features = Object.keys(state.features)
    .filter((name) => state.features[name])
    .join(' ')
  await refreshList()
  const open = /^#c=([0-9a-f-]{36})$/i.exec(location.hash)?.[1]
  if (open && hasIdentity()) await openConversation(open)
  document.body.dataset.ready = 'true'
}

void start()
