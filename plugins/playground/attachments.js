// Attachments in the playground (CONTRACT §20): files picked with the 📎
// button or dropped on the composer go through the upload flow (create, PUT
// to the signed URL, uploaded) and wait as chips until the message is sent;
// the message then carries them as chatgpt.com sends them (image pointers in
// `multimodal_text` parts, every file in `metadata.attachments`). A message
// shows its images as thumbnails (from their download URLs) and its
// documents by name.

const FILES = '/backend-api/files'

/** Download URLs already known, by file id: a thumbnail asks for one once. */
const downloadUrls = new Map()

/**
 * The composer's attachments: `elements` {button, input, list, dropZone};
 * `call(method, path, body)` calls the API with the user's identity; `say`
 * reports progress and errors.
 */
export function attachmentPicker(elements, call, say) {
  /** Uploaded files waiting to be sent, and uploads still running. */
  let ready = []
  let uploading = 0

  function render() {
    elements.list.replaceChildren(
      ...ready.map((file) => {
        const chip = document.createElement('li')
        chip.className = 'attachment-chip'
        chip.dataset.fileId = file.id
        chip.textContent = file.name
        const remove = document.createElement('button')
        remove.type = 'button'
        remove.className = 'attachment-remove'
        remove.textContent = '×'
        remove.setAttribute('aria-label', `Remove ${file.name}`)
        remove.addEventListener('click', () => {
          ready = ready.filter((other) => other !== file)
          render()
        })
        chip.append(remove)
        return chip
      }),
    )
    elements.list.hidden = ready.length === 0
  }

  async function upload(file) {
    uploading++
    say(`Uploading ${file.name}…`)
    try {
      const created = await (
        await call('POST', FILES, {
          file_name: file.name,
          file_size: file.size,
          use_case: 'multimodal',
        })
      ).json()
      const put = await fetch(created.upload_url, { method: 'PUT', body: file })
      if (!put.ok) {
        const error = await put.json().catch(() => ({}))
        throw new Error(error.detail ?? `The upload answered ${put.status}.`)
      }
      await call('POST', `${FILES}/${created.file_id}/uploaded`, {})
      const info = await (await call('GET', `${FILES}/${created.file_id}/download`)).json()
      downloadUrls.set(created.file_id, info.download_url)
      ready.push({
        id: created.file_id,
        name: file.name,
        mimeType: info.mime_type,
        size: info.size_bytes,
        ...(info.width === undefined ? {} : { width: info.width, height: info.height }),
      })
      render()
      say(`${file.name} is attached.`)
    } catch (error) {
      say(`${file.name} could not be attached: ${error.message}`, true)
    } finally {
      uploading--
    }
  }

  const uploadAll = (files) => Promise.all([...files].map(upload))

  elements.button.addEventListener('click', () => elements.input.click())
  elements.input.addEventListener('change', async () => {
    const files = [...elements.input.files]
    elements.input.value = ''
    await uploadAll(files)
  })
  elements.dropZone.addEventListener('dragover', (event) => {
    event.preventDefault()
    elements.dropZone.classList.add('dropping')
  })
  elements.dropZone.addEventListener('dragleave', () =>
    elements.dropZone.classList.remove('dropping'),
  )
  elements.dropZone.addEventListener('drop', async (event) => {
    event.preventDefault()
    elements.dropZone.classList.remove('dropping')
    await uploadAll(event.dataTransfer?.files ?? [])
  })

  return {
    /** Whether an upload still runs (a send waits for it). */
    busy: () => uploading > 0,
    /** Whether files wait to be sent. */
    any: () => ready.length > 0,
    /** The files waiting, emptied: they go with the message being sent. */
    take() {
      const taken = ready
      ready = []
      render()
      return taken
    },
  }
}

/** A user message with `files`: images as pointers before the text, every file listed. */
export function messageWithFiles(text, files, id = crypto.randomUUID()) {
  const images = files.filter((file) => file.mimeType?.startsWith('image/'))
  return {
    id,
    role: 'user',
    content: {
      content_type: 'multimodal_text',
      parts: [
        ...images.map((file) => ({
          content_type: 'image_asset_pointer',
          asset_pointer: `file-service://${file.id}`,
          size_bytes: file.size,
          width: file.width ?? null,
          height: file.height ?? null,
        })),
        text,
      ],
    },
    metadata: { attachments: files },
  }
}

const idOfPointer = (pointer) => /^file-service:\/\/(file-[A-Za-z0-9_-]+)$/.exec(pointer)?.[1]

/**
 * What a message carries, to show above its text: a thumbnail per image
 * part, the name of each other attached file; undefined when it carries none.
 */
export function attachmentsView(message, call) {
  const parts = message.content?.parts ?? []
  const images = parts
    .filter((part) => typeof part === 'object' && part !== null && part.asset_pointer)
    .map((part) => idOfPointer(part.asset_pointer))
    .filter(Boolean)
  const listed = message.metadata?.attachments ?? []
  const documents = listed.filter(
    (file) => !images.includes(file.id) && !file.mimeType?.startsWith('image/'),
  )
  if (images.length === 0 && documents.length === 0) return undefined
  const box = document.createElement('div')
  box.className = 'attachments'
  for (const id of images) {
    const img = document.createElement('img')
    img.className = 'thumbnail'
    img.alt = listed.find((file) => file.id === id)?.name ?? 'image'
    img.dataset.fileId = id
    void thumbnailUrl(id, call).then((url) => {
      if (url) img.src = url
    })
    box.append(img)
  }
  for (const file of documents) {
    const name = document.createElement('span')
    name.className = 'document'
    name.dataset.fileId = file.id
    name.textContent = `📄 ${file.name ?? file.id}`
    box.append(name)
  }
  return box
}

/** A URL the image can be shown from; undefined when the file is gone. */
async function thumbnailUrl(id, call) {
  if (downloadUrls.has(id)) return downloadUrls.get(id)
  try {
    const info = await (await call('GET', `${FILES}/${id}/download`)).json()
    downloadUrls.set(id, info.download_url)
    return info.download_url
  } catch {
    return undefined
  }
}
