// The files a turn's user messages carry (CONTRACT §20), seen from the turn.
// When a send is accepted, before anything is stored: each file it names must
// be a ready file of the sender's (else 404), and images go only to a model
// whose catalogue entry has vision (else 422 naming it). When the model
// request is built: the files are read (images with their bytes), one wait
// with a deadline whose failure ends the turn with an error item naming it.
// The FileStore and the files table stay behind the AttachmentFiles port
// (src/files/file-service.ts implements it).
import { notFound } from '../../errors.ts'
import type { ReadyFile } from '../../files/file-repository.ts'
import { modelWithoutVision, type ResolvedFile } from '../../files/model-content.ts'

export interface AttachmentFiles {
  /** The user's ready files among ids (no bytes); others' and missing ones are left out. */
  readyFiles(userId: string, ids: readonly string[]): Promise<ReadyFile[]>
  /** The user's ready files of ids in order, images with their bytes; missing ones left out with skipMissing. */
  resolveAttachments(
    userId: string,
    ids: readonly string[],
    options: { skipMissing: true },
  ): Promise<ResolvedFile[]>
}

/** What a send's message names, as input-content.ts read it. */
export interface MessageFiles {
  fileIds: readonly string[]
  imageIds: readonly string[]
}

/** A turn's files could not be read in time (the store is slow or down). */
export class AttachmentReadError extends Error {
  constructor(
    readonly detail: string,
    cause?: unknown,
  ) {
    super(detail, { cause })
    this.name = 'AttachmentReadError'
  }
}

/**
 * Refuses a send whose messages name a file that is not a ready file of the
 * user's (404) or show images to a model without vision (422 naming it).
 */
export async function checkAttachments(
  files: AttachmentFiles | undefined,
  userId: string,
  messages: readonly MessageFiles[],
  model: { slug: string; vision?: boolean },
): Promise<void> {
  const ids = [...new Set(messages.flatMap((message) => message.fileIds))]
  if (ids.length === 0) return
  const ready = new Map((files ? await files.readyFiles(userId, ids) : []).map((f) => [f.id, f]))
  const missing = ids.find((id) => !ready.has(id))
  if (missing !== undefined) throw notFound(`File not found: ${missing}.`)
  const showsImage = messages.some((message) =>
    message.imageIds.some((id) => ready.get(id)?.mimeType.startsWith('image/')),
  )
  if (showsImage && !model.vision) throw modelWithoutVision(model.slug)
}

/**
 * The user's files of ids (those deleted since are left out), within
 * deadlineMs: past it, or when the store fails, AttachmentReadError.
 */
export async function readAttachments(
  files: AttachmentFiles | undefined,
  userId: string,
  ids: readonly string[],
  deadlineMs: number,
): Promise<ResolvedFile[]> {
  if (ids.length === 0 || !files) return []
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AttachmentReadError(
            `The attached files could not be read within ${deadlineMs / 1000} s; the reply stops here.`,
          ),
        ),
      deadlineMs,
    )
  })
  try {
    return await Promise.race([files.resolveAttachments(userId, ids, { skipMissing: true }), late])
  } catch (error) {
    if (error instanceof AttachmentReadError) throw error
    throw new AttachmentReadError(
      'The attached files could not be read; the reply stops here.',
      error,
    )
  } finally {
    clearTimeout(timer)
  }
}
