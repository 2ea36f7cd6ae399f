// The pure parts of reading an import (CONTRACT §17): cutting a JSON array
// into its elements however its bytes are chunked, and the zip decoder that
// decompresses only the entry being extracted.
import { describe, expect, test } from 'bun:test'
import { deflateSync, strToU8, UnzipInflate } from 'fflate'
import {
  type ArrayElement,
  JsonArraySplitter,
} from '../../src/conversation/management/import/json-array-splitter.ts'
import {
  isConversationsEntry,
  selectiveDecoder,
} from '../../src/conversation/management/import/zip-conversations.ts'

const text = (element: ArrayElement) => new TextDecoder().decode(element.bytes)

/** The elements of `json` fed in chunks of `size` bytes (through a splitter keeping at most `max` a piece). */
function elementsOf(json: string | Uint8Array, size: number, max?: number): ArrayElement[] {
  const bytes = typeof json === 'string' ? strToU8(json) : json
  const splitter = new JsonArraySplitter(max)
  const elements: ArrayElement[] = []
  for (let at = 0; at < bytes.length; at += size)
    elements.push(...splitter.push(bytes.subarray(at, at + size)))
  splitter.end()
  expect(elements.map((element) => element.index)).toEqual(elements.map((_, index) => index))
  return elements
}

const split = (json: string | Uint8Array, size: number) => elementsOf(json, size).map(text)

describe('JsonArraySplitter', () => {
  const tricky = [
    { id: 'a', text: 'quotes " and brackets ] } [ { inside', parts: ['\\', '\\"', 'é ✓ 😀'] },
    { id: 'b', nested: [[1, [2, { deep: ['}'] }]], {}], empty: '' },
    { id: 'c' },
  ]
  const json = ` \n[ ${tricky.map((value) => JSON.stringify(value, null, 2)).join(' ,\n')} ]\n `

  test.each([1, 2, 3, 7, 64, 100_000])('cuts the same elements in chunks of %i bytes', (size) => {
    expect(split(json, size).map((element) => JSON.parse(element))).toEqual(tricky)
  })

  test('an empty array, and a byte order mark before it', () => {
    expect(split('[]', 1)).toEqual([])
    expect(split(new Uint8Array([0xef, 0xbb, 0xbf, ...strToU8('[{"x":1}]')]), 1)).toEqual([
      '{"x":1}',
    ])
  })

  // What is no conversation is the importer's to skip (CONTRACT §23): the array goes on.
  const mixed = [{ id: 'a' }, 2, 'a "quoted" ] string', [1, [2]], true, null, -1.5e3, { id: 'b' }]
  const mixedJson = `[${mixed.map((value) => JSON.stringify(value)).join(', ')} ]`

  test.each([1, 2, 5, 100])('cuts elements of every kind, in chunks of %i bytes', (size) => {
    expect(split(mixedJson, size).map((element) => JSON.parse(element))).toEqual(mixed)
  })

  test('a bare word is cut where the array goes on, for JSON.parse to judge', () => {
    expect(split('[nope,{"a":1} , tru ]', 3)).toEqual(['nope', '{"a":1}', 'tru'])
  })

  test('an element past the limit is reported by its size alone, and the next is whole', () => {
    const big = JSON.stringify({ id: 'big', text: 'x'.repeat(100) })
    const json = `[{"id":"a"},${big},{"id":"c"}]`
    for (const size of [1, 7, 1000]) {
      const elements = elementsOf(json, size, 50)
      expect(elements.map((element) => (element.bytes ? text(element) : element.size))).toEqual([
        '{"id":"a"}',
        big.length,
        '{"id":"c"}',
      ])
    }
    // Exactly at the limit is kept.
    expect(elementsOf(`[${big}]`, 9, big.length)[0]?.bytes).toBeDefined()
  })

  test('breaks are errors that say where', () => {
    const errorOf = (json: string) => {
      try {
        split(json, 5)
      } catch (error) {
        return (error as Error).message
      }
      return undefined
    }
    expect(errorOf('{"not":"an array"}')).toContain('must be a JSON array')
    expect(errorOf('[{"a":1},]')).toContain('conversation [1] is missing before "]"')
    expect(errorOf('[,{"a":1}]')).toContain('conversation [0] is missing before ","')
    expect(errorOf('[{"a":1}{"b":2}]')).toContain('must follow conversation [0]')
    expect(errorOf('[{"a":"}')).toContain('ends inside conversation [0]')
    expect(errorOf('[{"a":1},')).toContain('before its array is closed')
    expect(errorOf('[]]')).toContain('text after the array')
  })
})

describe('the zip entry decoder', () => {
  const compressed = deflateSync(strToU8('the text of the entry'))

  test('decompresses the entry being extracted', () => {
    const Decoder = selectiveDecoder(UnzipInflate, () => true)
    const out: Uint8Array[] = []
    const decoder = new Decoder()
    decoder.ondata = (error, data) => {
      expect(error).toBeNull()
      out.push(data)
    }
    decoder.push(compressed, true)
    expect(new TextDecoder().decode(Buffer.concat(out))).toBe('the text of the entry')
  })

  test('drops every other entry unread: nothing comes out, not even an error for garbage', () => {
    const Decoder = selectiveDecoder(UnzipInflate, () => false)
    const calls: [unknown, number, boolean][] = []
    const decoder = new Decoder()
    decoder.ondata = (error, data, final) => calls.push([error, data.length, final])
    decoder.push(compressed, false)
    decoder.push(new Uint8Array(1000).fill(0xff), true)
    expect(calls).toEqual([[null, 0, true]])
    // The same garbage, decompressed, is an error.
    const Extracting = selectiveDecoder(UnzipInflate, () => true)
    const extracting = new Extracting()
    const errors: unknown[] = []
    extracting.ondata = (error) => errors.push(error)
    extracting.push(new Uint8Array(1000).fill(0xff), true)
    expect(errors.some((error) => error !== null)).toBe(true)
  })

  test('only conversations.json at the top or in one ordinary folder is read', () => {
    expect(['conversations.json', 'export/conversations.json'].map(isConversationsEntry)).toEqual([
      true,
      true,
    ])
    expect(
      [
        '../conversations.json',
        './conversations.json',
        '/conversations.json',
        'a/b/conversations.json',
        'x\\conversations.json',
        'conversations.json/',
        'Conversations.json',
      ].map(isConversationsEntry),
    ).toEqual([false, false, false, false, false, false, false])
  })
})
