// Models for tests that act while a reply is still streaming: the local echo
// model slowed down (a real reply, chunk by chunk, for as long as the message
// makes it), and a gated model that stops mid-reply until the test lets it go
// on (for a point in the reply that does not depend on timing).
import { createLocalModel } from '../../src/conversation/model/local.ts'
import type { ModelProvider } from '../../src/conversation/model/provider.ts'

/** 40 words: the longest echo the local model makes, so a reply of 59 chunks (1.2 s at 20 ms). */
export const LONG_MESSAGE = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ')

/** The local echo model with chunkDelayMs between chunks (20 ms: LONG_MESSAGE's reply takes 1.2 s). */
export const slowLocalModel = (chunkDelayMs = 20) =>
  createLocalModel({ slug: 'local-echo', chunkDelayMs })

export interface GatedModel extends ModelProvider {
  /** Closes the gate: replies from now on stop at it until release(). */
  hold(): void
  /** Opens the gate: replies waiting at it go on, and later ones pass it. */
  release(): void
}

export interface GatedModelOptions {
  /** The chunks every reply streams before the gate. */
  before?: string[]
  /** The chunks after it. */
  after?: string[]
  slug?: string
  /** Whether the gate starts open (then hold() closes it); it starts closed. */
  open?: boolean
}

/** A model whose every reply streams `before`, waits at the gate while it is closed, then streams `after`. */
export function gatedModel({
  before = [],
  after = ['done'],
  slug = 'gated',
  open = false,
}: GatedModelOptions = {}): GatedModel {
  let release = () => {}
  let gate = Promise.resolve()
  const model: GatedModel = {
    slug,
    hold() {
      gate = new Promise<void>((resolve) => {
        release = resolve
      })
    },
    release: () => release(),
    async *stream() {
      for (const chunk of before) yield chunk
      await gate
      for (const chunk of after) yield chunk
    },
  }
  if (!open) model.hold()
  return model
}
