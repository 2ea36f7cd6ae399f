// The pure v1 item builders: exact bytes of each item kind.
import { expect, test } from 'bun:test'
import {
  completionItem,
  deltaEncodingItem,
  doneItem,
  encodeItem,
  errorItem,
  KEEPALIVE,
} from '../../src/conversation/encoding.ts'
import { titleFrom } from '../../src/conversation/messages.ts'

const bytes = (u: Uint8Array) => new TextDecoder().decode(u)

test('items encode as event line, one data line, blank line', () => {
  expect(bytes(encodeItem(deltaEncodingItem()))).toBe('event: delta_encoding\ndata: "v1"\n\n')
  expect(bytes(encodeItem(doneItem()))).toBe('data: [DONE]\n\n')
  expect(bytes(KEEPALIVE)).toBe(': ping\n\n')
})

test('a chunk with newlines stays on one data line', () => {
  const item = encodeItem(errorItem('c', 'm', 'line one\nline two'))
  expect(bytes(item).split('\n')).toEqual([
    'data: {"type":"error","conversation_id":"c","message_id":"m","code":"model_error","detail":"line one\\nline two"}',
    '',
    '',
  ])
})

test('the completion patches', () => {
  expect(bytes(encodeItem(completionItem('finished_successfully')))).toBe(
    'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/status","o":"replace","v":"finished_successfully"},{"p":"/message/end_turn","o":"replace","v":true},{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"stop"}}}]}\n\n',
  )
})

test('titles: one line, at most 80 characters, surrogate pairs intact', () => {
  expect(titleFrom('  hello\n\nworld  ')).toBe('hello world')
  const long = titleFrom('😀'.repeat(100))
  expect(Array.from(long)).toHaveLength(80)
  expect(long.endsWith('…')).toBe(true)
  expect(long.includes('\uFFFD')).toBe(false)
})
