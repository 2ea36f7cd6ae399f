// A multimodal message and its files as OpenAI content
// (src/files/model-content.ts): images as data-URL image_url parts for a
// vision model and a 422 naming any other, documents as text cut to the token
// budget with a note. Tokens are counted here one per character, so every cut
// is exact; the real tokenizers are the caller's.
import { describe, expect, test } from 'bun:test'
import { DomainError } from '../../src/errors.ts'
import { type ResolvedFile, toModelContent } from '../../src/files/model-content.ts'
import type { MultimodalPart } from '../../src/files/multimodal-message.ts'

const IMAGE = 'file-0123456789abcdef0123456789abcdef'
const DOC = 'file-fedcba9876543210fedcba9876543210'
const DOC2 = 'file-00000000000000000000000000000002'

const image: ResolvedFile = {
  id: IMAGE,
  name: 'photo.png',
  mimeType: 'image/png',
  text: null,
  bytes: new Uint8Array([137, 80, 78, 71]),
}
const doc = (id: string, name: string, text: string): ResolvedFile => ({
  id,
  name,
  mimeType: 'text/plain',
  text,
})
const imagePart: MultimodalPart = {
  content_type: 'image_asset_pointer',
  asset_pointer: `file-service://${IMAGE}`,
}
const chars = (text: string) => text.length
const vision = { slug: 'gpt-4o', vision: true }

describe('toModelContent', () => {
  test('text and image parts in their order; the image as a data URL of its bytes', () => {
    expect(
      toModelContent([imagePart, 'What is this?'], [image], {
        model: vision,
        documentTokens: 1000,
        countTokens: chars,
      }),
    ).toEqual([
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw==' } },
      { type: 'text', text: 'What is this?' },
    ])
  })

  test('an image to a model without vision is a 422 naming the model', () => {
    const attempt = () =>
      toModelContent([imagePart, 'hi'], [image], {
        model: { slug: 'local-echo', vision: false },
        documentTokens: 1000,
        countTokens: chars,
      })
    expect(attempt).toThrow(DomainError)
    expect(attempt).toThrow('"local-echo" cannot see images')
  })

  test('a document that fits comes whole, after the parts, with its name', () => {
    const content = toModelContent(['Summarise'], [doc(DOC, 'notes.md', '# Plan')], {
      model: { slug: 'local-echo', vision: false },
      documentTokens: 1000,
      countTokens: chars,
    })
    expect(content).toEqual([
      { type: 'text', text: 'Summarise' },
      { type: 'text', text: 'Attached document "notes.md":\n\n# Plan' },
    ])
  })

  test('a document past the budget is cut to fit, with a note; the next one does not fit at all', () => {
    const long = 'abcdefghij'.repeat(100)
    const budget = 200
    const content = toModelContent(
      ['Summarise'],
      [doc(DOC, 'long.txt', long), doc(DOC2, 'more.txt', 'more text')],
      { model: vision, documentTokens: budget, countTokens: chars },
    )
    const [, cut, dropped] = content
    expect(cut?.type).toBe('text')
    const text = cut?.type === 'text' ? cut.text : ''
    expect(text.length).toBeLessThanOrEqual(budget)
    expect(text).toStartWith('Attached document "long.txt":\n\nabcdefghij')
    expect(text).toEndWith(
      '[The document "long.txt" was cut to fit the model\'s context: this is its beginning only.]',
    )
    // As much as fits: one more character would not.
    expect(text.length).toBe(budget)
    expect(dropped).toEqual({
      type: 'text',
      text: '[The document "more.txt" is attached but did not fit the model\'s context.]',
    })
  })

  test('a cut never splits a character made of two UTF-16 units', () => {
    const emoji = '😀'.repeat(200)
    const [cut] = toModelContent([], [doc(DOC, 'e.txt', emoji)], {
      model: vision,
      documentTokens: 150,
      countTokens: chars,
    })
    const text = cut?.type === 'text' ? cut.text : ''
    expect(text.isWellFormed()).toBe(true)
    expect(text).toContain('😀')
  })

  test('a part naming a file that was not given contributes nothing (the caller resolves files first)', () => {
    expect(
      toModelContent([imagePart, 'hi'], [], {
        model: vision,
        documentTokens: 10,
        countTokens: chars,
      }),
    ).toEqual([{ type: 'text', text: 'hi' }])
  })
})
