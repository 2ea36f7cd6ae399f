// Reading a `multimodal_text` user message (src/files/multimodal-message.ts):
// the shapes chatgpt.com and gpt4free's create_messages send, and hostile or
// malformed parts and attachments, each a 422 naming the field.
import { describe, expect, test } from 'bun:test'
import { DomainError } from '../../src/errors.ts'
import { readMultimodalMessage } from '../../src/files/multimodal-message.ts'

const IMAGE = 'file-0123456789abcdef0123456789abcdef'
const DOC = 'file-fedcba9876543210fedcba9876543210'

/** What gpt4free's create_messages sends for one image and one document. */
const gpt4free = {
  content: {
    content_type: 'multimodal_text',
    parts: [
      { asset_pointer: `file-service://${IMAGE}`, height: 2, size_bytes: 120, width: 3 },
      'What is in these?',
    ],
  },
  metadata: {
    attachments: [
      { id: IMAGE, mimeType: 'image/png', name: 'photo.png', size: 120, height: 2, width: 3 },
      { id: DOC, mimeType: 'text/markdown', name: 'notes.md', size: 40 },
    ],
  },
}

const refusal = (content: unknown, metadata?: unknown): string => {
  try {
    readMultimodalMessage(content, metadata, 'messages[0]')
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError)
    expect((error as DomainError).kind).toBe('invalid')
    return (error as DomainError).detail
  }
  throw new Error('accepted')
}

describe('readMultimodalMessage', () => {
  test("gpt4free's message: the image part gains its content_type, the files are listed once each", () => {
    const read = readMultimodalMessage(gpt4free.content, gpt4free.metadata, 'messages[0]')
    expect(read.parts).toEqual([
      {
        content_type: 'image_asset_pointer',
        asset_pointer: `file-service://${IMAGE}`,
        size_bytes: 120,
        width: 3,
        height: 2,
      },
      'What is in these?',
    ])
    expect(read.fileIds).toEqual([IMAGE, DOC])
    expect(read.attachments).toEqual(gpt4free.metadata.attachments)
  })

  test('chatgpt.com’s own shape (with content_type, null dimensions, no attachments) is read too', () => {
    const read = readMultimodalMessage(
      {
        content_type: 'multimodal_text',
        parts: [
          {
            content_type: 'image_asset_pointer',
            asset_pointer: `file-service://${IMAGE}`,
            size_bytes: null,
            width: null,
            height: null,
          },
          '',
        ],
      },
      undefined,
      'messages[0]',
    )
    expect(read.fileIds).toEqual([IMAGE])
    expect(read.attachments).toEqual([])
  })

  test('malformed and hostile parts are 422s naming the field', () => {
    const parts = (...values: unknown[]) => ({ content_type: 'multimodal_text', parts: values })
    expect(refusal({ content_type: 'text', parts: ['a'] })).toContain('content.content_type')
    expect(refusal(parts())).toContain('content.parts')
    expect(refusal(parts(...new Array(33).fill('a')))).toContain('content.parts')
    expect(refusal(parts(42))).toContain('content.parts[0]')
    expect(refusal(parts(null))).toContain('content.parts[0]')
    expect(refusal(parts('a', { asset_pointer: 'file-service://../../etc/passwd' }))).toContain(
      'content.parts[1].asset_pointer',
    )
    expect(refusal(parts({ asset_pointer: 'https://example.com/x.png' }))).toContain(
      'asset_pointer',
    )
    expect(refusal(parts({ asset_pointer: `file-service://${IMAGE}`, width: -1 }))).toContain(
      'content.parts[0].width',
    )
    expect(refusal(parts({ asset_pointer: `file-service://${IMAGE}`, width: '3' }))).toContain(
      'width',
    )
    expect(
      refusal(
        parts({ content_type: 'audio_asset_pointer', asset_pointer: `file-service://${IMAGE}` }),
      ),
    ).toContain('content.parts[0].content_type')
  })

  test('malformed and hostile attachments are 422s naming the field', () => {
    const content = { content_type: 'multimodal_text', parts: ['a'] }
    expect(refusal(content, { attachments: 'x' })).toContain('metadata.attachments')
    expect(refusal(content, { attachments: new Array(11).fill({ id: DOC }) })).toContain(
      'metadata.attachments',
    )
    expect(refusal(content, { attachments: [{ id: '../x' }] })).toContain(
      'metadata.attachments[0].id',
    )
    expect(refusal(content, { attachments: [{}] })).toContain('metadata.attachments[0].id')
    expect(refusal(content, { attachments: [{ id: DOC, name: 'n'.repeat(256) }] })).toContain(
      'metadata.attachments[0].name',
    )
    expect(refusal(content, { attachments: [{ id: DOC, size: Number.NaN }] })).toContain(
      'metadata.attachments[0].size',
    )
  })
})
