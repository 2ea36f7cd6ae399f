// The pure v1 item builders: exact bytes of each item kind, and reading the
// reply text back out of frames (what a new owner keeps of a dead runner's turn).
import { expect, test } from 'bun:test'
import { titleFrom } from '../../src/conversation/messages.ts'
import {
  appendedText,
  appendFrame,
  appendItem,
  completionItem,
  deltaEncodingItem,
  doneItem,
  errorItem,
  firstTokenMarkerItem,
  frameOf,
  KEEPALIVE,
} from '../../src/conversation/stream/encoding.ts'

const bytes = (u: Uint8Array) => new TextDecoder().decode(u)
const encodeItem = (item: Parameters<typeof frameOf>[0]) => new TextEncoder().encode(frameOf(item))

test('items encode as event line, one data line, blank line', () => {
  expect(bytes(encodeItem(deltaEncodingItem()))).toBe('event: delta_encoding\ndata: "v1"\n\n')
  expect(bytes(encodeItem(doneItem()))).toBe('data: [DONE]\n\n')
  expect(KEEPALIVE).toBe(': ping\n\n')
})

test('a chunk with newlines stays on one data line', () => {
  const item = encodeItem(errorItem('c', 'm', 'line one\nline two'))
  expect(bytes(item).split('\n')).toEqual([
    'data: {"type":"error","conversation_id":"c","message_id":"m","code":"model_error","detail":"line one\\nline two","error":"line one\\nline two"}',
    '',
    '',
  ])
})

test('the completion patches', () => {
  expect(frameOf(completionItem('stop'))).toBe(
    'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/status","o":"replace","v":"finished_successfully"},{"p":"/message/end_turn","o":"replace","v":true},{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"stop"}}}]}\n\n',
  )
  // A stop (CONTRACT §12): a finished reply, interrupted.
  expect(frameOf(completionItem('interrupted'))).toBe(
    'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/status","o":"replace","v":"finished_successfully"},{"p":"/message/end_turn","o":"replace","v":true},{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"interrupted"}}}]}\n\n',
  )
  expect(frameOf(completionItem('error'))).toBe(
    'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/status","o":"replace","v":"finished_partial_completion"},{"p":"/message/end_turn","o":"replace","v":false},{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"error"}}}]}\n\n',
  )
})

test('an append frame is the append item framed, byte for byte, whatever the chunk holds', () => {
  expect(appendFrame('Hi ')).toBe(
    'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/content/parts/0","o":"append","v":"Hi "}]}\n\n',
  )
  const hostile = [
    '',
    'chunk',
    '"chunk"',
    '\\',
    '\n\ndata: [DONE]\n\n',
    '\u2028\u0000',
    '😀',
    '\ud800',
    '{"v":1}',
  ]
  for (const chunk of hostile) expect(appendFrame(chunk)).toBe(frameOf(appendItem(chunk)))
})

test('appendedText reads back exactly the appended chunks, ignoring every other item', () => {
  const chunks = ['Hello ', 'wörld\n', '"quoted" ', 'event: delta\ndata: x', '😀']
  const frames = [
    frameOf(deltaEncodingItem()),
    frameOf(firstTokenMarkerItem('c', 'm')),
    ...chunks.map((chunk) => frameOf(appendItem(chunk))),
    frameOf(errorItem('c', 'm', 'oops', 'interrupted')),
    frameOf(completionItem('error')),
    frameOf(doneItem()),
  ]
  expect(appendedText(frames)).toBe(chunks.join(''))
  expect(appendedText([])).toBe('')
})

test('titles: one line, at most 80 characters, surrogate pairs intact', () => {
  expect(titleFrom('  hello\n\nworld  ')).toBe('hello world')
  const long = titleFrom('😀'.repeat(100))
  expect(Array.from(long)).toHaveLength(80)
  expect(long.endsWith('…')).toBe(true)
  expect(long.includes('\uFFFD')).toBe(false)
})
