import { describe, expect, test } from 'bun:test'
import type { ToolSource } from '../../src/tools/catalogue.ts'
import { createToolCatalogue } from '../../src/tools/tool-catalogue.ts'
import { safeToolName } from '../../src/tools/tool-names.ts'
import { capResult, mcpResultText } from '../../src/tools/tool-result.ts'

// The catalogue's rules with sources in this process: errors, deadlines, names, caps.

const context = { userId: 'u1', signal: new AbortController().signal }

function source(name: string, call: ToolSource['call'], tools = ['t']): ToolSource {
  return {
    name,
    tools: async () => tools.map((tool) => ({ name: tool, description: '', parameters: {} })),
    call,
  }
}

describe('tool catalogue', () => {
  test('a source that throws or lists nothing never fails the catalogue', async () => {
    const warned: string[] = []
    const catalogue = createToolCatalogue({
      sources: [
        source('boom', async () => {
          throw new Error('exploded')
        }),
        {
          name: 'unlistable',
          tools: async () => {
            throw new Error('no list')
          },
          call: async () => ({ text: '', isError: false }),
        },
      ],
      timeoutMs: 5_000,
      maxOutputChars: 1_000,
      warn: (message) => warned.push(message),
    })
    expect((await catalogue.list()).map((tool) => tool.name)).toEqual(['t'])
    expect(await catalogue.call('t', '{}', context)).toEqual({
      text: 'The tool t failed: exploded',
      isError: true,
    })
    expect(warned).toEqual(['tools of unlistable could not be listed', 'the tool t failed'])
  })

  test('a source that ignores its signal is still cut at the deadline', async () => {
    const catalogue = createToolCatalogue({
      sources: [source('slow', () => new Promise(() => {}))],
      timeoutMs: 200,
      maxOutputChars: 1_000,
    })
    await catalogue.list()
    expect(await catalogue.call('t', '{}', context)).toEqual({
      text: 'The tool t did not answer within 0.2 s.',
      isError: true,
    })
  })

  test('the source gets the parsed arguments, the user and a signal', async () => {
    let seen: unknown
    const catalogue = createToolCatalogue({
      sources: [
        source('s', async (name, args, ctx) => {
          seen = { name, args, userId: ctx.userId, signal: ctx.signal instanceof AbortSignal }
          return { text: 'ok', isError: false }
        }),
      ],
      timeoutMs: 5_000,
      maxOutputChars: 1_000,
    })
    expect(await catalogue.call('t', '{"a":[1,{"b":null}]}', context)).toEqual({
      text: 'ok',
      isError: false,
    })
    expect(seen).toEqual({ name: 't', args: { a: [1, { b: null }] }, userId: 'u1', signal: true })
  })

  test('hostile names: made safe for a model, colliding ones namespaced by source', async () => {
    expect(safeToolName('a.b/c d')).toBe('a_b_c_d')
    expect(safeToolName('')).toBe('_')
    expect(safeToolName('x'.repeat(100))).toHaveLength(64)
    const ok = async () => ({ text: 'ok', isError: false })
    const catalogue = createToolCatalogue({
      sources: [source('one', ok, ['search', 'only_one']), source('two', ok, ['search'])],
      timeoutMs: 5_000,
      maxOutputChars: 1_000,
    })
    expect((await catalogue.list()).map((tool) => tool.name)).toEqual([
      'one__search',
      'only_one',
      'two__search',
    ])
  })

  test('capResult keeps at most max characters, with the count of what was cut', () => {
    const long = { text: 'a'.repeat(10_000), isError: false }
    const capped = capResult(long, 500)
    expect(capped.text.length).toBeLessThanOrEqual(500)
    const kept = capped.text.indexOf('\n')
    expect(Number(/(\d+) more/.exec(capped.text)?.[1])).toBe(10_000 - kept)
    expect(capResult({ text: 'short', isError: true }, 500)).toEqual({
      text: 'short',
      isError: true,
    })
    // A surrogate pair is never cut in half.
    const emoji = capResult({ text: '🌍'.repeat(1_000), isError: false }, 301)
    expect(emoji.text.isWellFormed()).toBe(true)
  })

  test('mcpResultText: text blocks joined, other blocks named, structured content as JSON', () => {
    expect(
      mcpResultText({
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'file:///a', text: 'inside' } },
          { type: 'resource_link', uri: 'file:///b', name: 'b' },
        ],
      }),
    ).toBe('one\n[image image/png]\ninside\n[resource file:///b]')
    expect(mcpResultText({ content: [], structuredContent: { a: 1 } })).toBe('{"a":1}')
    expect(mcpResultText({})).toBe('')
  })
})
