// The playground page: pick a user (X-User-Id) or paste a JWT, see the
// conversation list, open one, send and watch the reply stream in, stop it,
// regenerate or edit, rename, archive and delete, pick the model (models.js)
// and set custom instructions (instructions.js); export the history as
// chatgpt.com's conversations.json and import one (or its data export zip).
// A reload mid-reply resumes it (stream_status, then /resume from the first
// item). Buttons for routes this server does not have (read from /docs/json)
// stay hidden.
import { instructionsDialog } from './instructions.js'
import { modelPicker } from './models.js'
import { applyEvent, newTurn, sseEvents } from './stream.js'

const API = '/backend-api'
const $ = (id) => document.getElementById(id)
const el = {
  userId: $('user-id'),
  jwt: $('jwt'),
  who: $('who'),
  list: $('conversations'),
  title: $('title'),
  messages: $('messages'),
  status: $('status'),
  prompt: $('prompt'),
  send: $('send'),
  stop: $('stop'),
  rename: $('rename'),
  archive: $('archive'),
  remove: $('delete'),
  model: $('model'),
}

const state = {
  // The token lives in this tab only (sessionStorage): it survives a reload, not the browser.
  identity: {
    userId: localStorage.getItem('conduit.user') ?? '',
    jwt: sessionStorage.getItem('conduit.jwt') ?? '',
  },
  /** What this server offers beyond the basics, from its OpenAPI document. */
  features: { manage: false, variant: false, edit: false, transfer: false },
  conversationId: undefined,
  /** Messages of the open conversation, as the detail route gave them. */
  messages: [],
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

// --- identity ----------------------------------------------------------------

function showIdentity() {
  const { userId, jwt } = state.identity
  el.who.textContent = jwt ? 'signed in with a token' : userId ? `as ${userId}` : 'choose a user'
}

function useIdentity(event) {
  event.preventDefault()
  state.identity = { userId: el.userId.value.trim(), jwt: el.jwt.value.trim() }
  localStorage.setItem('conduit.user', state.identity.userId)
  sessionStorage.setItem('conduit.jwt', state.identity.jwt)
  showIdentity()
  newConversation()
  void refreshList()
}

const hasIdentity = () => Boolean(state.identity.userId || state.identity.jwt)

// --- the conversation list ---------------------------------------------------

async function refreshList() {
  if (!hasIdentity()) return
  try {
    const page = await callJson('GET', `${API}/conversations?limit=50`)
    el.list.replaceChildren(...page.items.map(listItem))
  } catch (error) {
    say(explain(error), true)
  }
}

function listItem(item) {
  const li = document.createElement('li')
  li.dataset.id = item.id
  li.classList.toggle('current', item.id === state.conversationId)
  const button = document.createElement('button')
  button.type = 'button'
  button.textContent = item.title || 'Untitled'
  const when = document.createElement('span')
  when.className = 'when'
  when.textContent = new Date(item.updated_at).toLocaleString()
  button.append(when)
  button.addEventListener('click', () => void openConversation(item.id))
  li.append(button)
  return li
}

function markCurrent() {
  for (const li of el.list.children)
    li.classList.toggle('current', li.dataset.id === state.conversationId)
}

// --- one conversation --------------------------------------------------------

function setConversation(id, title) {
  state.conversationId = id
  el.title.textContent = title ?? (id ? el.title.textContent : 'New conversation')
  history.replaceState(null, '', id ? `#c=${id}` : location.pathname)
  const manage = state.features.manage && id !== undefined
  el.rename.hidden = !manage
  el.archive.hidden = !manage
  el.remove.hidden = !manage
  markCurrent()
}

function newConversation() {
  stopReading()
  state.messages = []
  el.messages.replaceChildren()
  models.show(undefined)
  setConversation(undefined)
  say('')
}

async function openConversation(id) {
  stopReading()
  try {
    const detail = await callJson('GET', `${API}/conversation/${id}`)
    const title = el.list.querySelector(`li[data-id="${id}"] button`)?.firstChild?.textContent
    setConversation(id, title)
    const status = await callJson('GET', `${API}/conversation/${id}/stream_status`)
    const streamingId = status.streaming ? status.message_id : undefined
    state.messages = withModels(detail).filter(isShown)
    // The conversation goes on with the model of its current reply.
    models.show(detail.mapping?.[detail.current_node]?.message?.metadata?.model_slug)
    el.messages.replaceChildren(
      ...state.messages.filter((message) => message.id !== streamingId).map(messageItem),
    )
    say('')
    // Read on in the background: the page is usable while the reply streams.
    if (status.streaming) void resume(id, status.token)
  } catch (error) {
    say(explain(error), true)
  }
}

const textOf = (message) => (message.content?.parts ?? []).join('')
const roleOf = (message) => message.role ?? message.author?.role ?? 'assistant'
/** Text from the user or the assistant: an import's system and tool messages are not shown. */
const isShown = (message) =>
  ['user', 'assistant'].includes(roleOf(message)) && Array.isArray(message.content?.parts)

/** The detail's branch, each reply with the model that wrote it (from the mapping). */
const withModels = (detail) =>
  detail.messages.map((message) => ({
    ...message,
    model_slug: detail.mapping?.[message.id]?.message?.metadata?.model_slug,
  }))

function messageItem(message) {
  const li = document.createElement('li')
  const role = roleOf(message)
  li.className = role
  li.dataset.id = message.id
  const label = document.createElement('div')
  label.className = 'role'
  label.textContent = role
  if (role === 'assistant' && message.model_slug) {
    const model = document.createElement('span')
    model.className = 'model'
    model.textContent = message.model_slug
    label.append(' · ', model)
  }
  const text = document.createElement('div')
  text.className = 'text'
  text.textContent = textOf(message)
  li.append(label, text, messageActions(message, role))
  return li
}

function messageActions(message, role) {
  const actions = document.createElement('div')
  actions.className = 'message-actions'
  if (role === 'assistant' && state.features.variant)
    actions.append(actionButton('Regenerate', () => regenerate(message)))
  if (role === 'user' && state.features.edit)
    actions.append(actionButton('Edit', () => edit(message)))
  return actions
}

function actionButton(label, onClick) {
  const button = document.createElement('button')
  button.type = 'button'
  button.className = label.toLowerCase()
  button.textContent = label
  button.addEventListener('click', () => void onClick())
  return button
}

// --- streams -----------------------------------------------------------------

function stopReading() {
  state.reading?.abort.abort()
  state.reading = undefined
  el.stop.hidden = true
}

/** Shows a reply stream as it comes; resolves when it ends or is left. */
async function readStream(response) {
  const abort = new AbortController()
  const turn = newTurn()
  state.reading = { abort, turn }
  el.stop.hidden = false
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
    }
  }
  if (abort.signal.aborted) return
  reply?.classList.remove('streaming')
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

function replyItem(turn) {
  const existing = el.messages.querySelector(`li[data-id="${CSS.escape(turn.messageId)}"]`)
  existing?.remove()
  const li = messageItem({
    id: turn.messageId,
    role: 'assistant',
    content: { parts: [''] },
    model_slug: turn.modelSlug,
  })
  li.classList.add('streaming')
  el.messages.append(li)
  return li
}

function updateReply(li, turn) {
  li.querySelector('.text').textContent = turn.text
  li.dataset.status = turn.status ?? ''
  if (turn.finish) li.dataset.finish = turn.finish
  el.messages.scrollTop = el.messages.scrollHeight
}

/** Re-reads the open conversation quietly, for ids and branches after a reply. */
async function syncMessages() {
  try {
    const detail = await callJson('GET', `${API}/conversation/${state.conversationId}`)
    state.messages = withModels(detail).filter(isShown)
    el.messages.replaceChildren(...state.messages.map(messageItem))
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

async function send(event) {
  event.preventDefault()
  const text = el.prompt.value
  if (text.trim() === '' || state.reading) return
  el.prompt.value = ''
  el.prompt.dataset.sent = text.slice(0, 80)
  const body = { messages: [userMessage(text)] }
  if (state.conversationId) body.conversation_id = state.conversationId
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
  await sendBody(body)
}

/** Sends an edited user message as a new branch from where the original was (CONTRACT §10). */
async function edit(original) {
  const text = prompt('Edit the message', textOf(original))
  if (text === null || text.trim() === '' || state.reading) return
  await sendBody({
    conversation_id: state.conversationId,
    parent_message_id: original.parent_id ?? 'client-created-root',
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

function rename() {
  const title = prompt('New title', el.title.textContent ?? '')
  if (title === null || title.trim() === '') return
  void patchConversation({ title: title.trim() }, () => {
    el.title.textContent = title.trim()
  })
}

function archive() {
  void patchConversation({ is_archived: true }, newConversation)
}

function remove() {
  if (!confirm('Delete this conversation for good?')) return
  void patchConversation({ is_visible: false }, newConversation)
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

async function start() {
  el.userId.value = state.identity.userId
  el.jwt.value = state.identity.jwt
  showIdentity()
  $('identity').addEventListener('submit', useIdentity)
  $('new-conversation').addEventListener('click', newConversation)
  $('composer').addEventListener('submit', send)
  el.prompt.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.shiftKey) send(event)
  })
  el.stop.addEventListener('click', () => void stop())
  el.rename.addEventListener('click', rename)
  el.archive.addEventListener('click', archive)
  el.remove.addEventListener('click', remove)
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
  await Promise.all([loadFeatures(), models.load()])
  $('transfer').hidden = !state.features.transfer
  document.body.dataset.features = Object.keys(state.features)
    .filter((name) => state.features[name])
    .join(' ')
  await refreshList()
  const open = /^#c=([0-9a-f-]{36})$/i.exec(location.hash)?.[1]
  if (open && hasIdentity()) await openConversation(open)
  document.body.dataset.ready = 'true'
}

void start()
