import { describe, expect, test } from 'bun:test'
import {
  MAX_TOOL_ARGUMENTS_CHARS,
  MAX_TOOL_CALLS_PER_ROUND,
  ToolCallAssembler,
} from '../../src/conversation/model/tool-call-assembler.ts'

describe('ToolCallAssembler', () => {
  test('puts parallel calls together from interleaved pieces, in index order', () => {
    const calls = new ToolCallAssembler()
    calls.add({ index: 1, id: 'call_b', name: 'weather', arguments: '' })
    calls.add({ index: 0, id: 'call_a', name: 'document_search', arguments: '{"que' })
    calls.add({ index: 1, arguments: '{"city":' })
    calls.add({ index: 0, arguments: 'ry":"redis"}' })
    calls.add({ index: 1, arguments: '"Paris"}' })
    expect(calls.finish()).toEqual([
      { id: 'call_a', name: 'document_search', arguments: '{"query":"redis"}' },
      { id: 'call_b', name: 'weather', arguments: '{"city":"Paris"}' },
    ])
  })

  test('without an index a piece continues the last call, and a new id starts another', () => {
    const calls = new ToolCallAssembler()
    calls.add({ id: 'x', name: 'f', arguments: '{"a":' })
    calls.add({ arguments: '1}' })
    calls.add({ id: 'y', name: 'g', arguments: '{}' })
    expect(calls.finish()).toEqual([
      { id: 'x', name: 'f', arguments: '{"a":1}' },
      { id: 'y', name: 'g', arguments: '{}' },
    ])
  })

  test('a call without an id gets one; a repeated name is not doubled', () => {
    const calls = new ToolCallAssembler()
    calls.add({ index: 3, name: 'f' })
    calls.add({ index: 3, name: 'f', arguments: '{}' })
    expect(calls.finish()).toEqual([{ id: 'call_3', name: 'f', arguments: '{}' }])
    expect(new ToolCallAssembler().finish()).toEqual([])
  })

  test('a hostile server cannot make it hold unbounded calls or arguments', () => {
    const many = new ToolCallAssembler()
    for (let i = 0; i < MAX_TOOL_CALLS_PER_ROUND; i++) many.add({ index: i, name: 'f' })
    expect(() => many.add({ index: MAX_TOOL_CALLS_PER_ROUND, name: 'f' })).toThrow(RangeError)
    const long = new ToolCallAssembler()
    long.add({ index: 0, name: 'f', arguments: 'x'.repeat(MAX_TOOL_ARGUMENTS_CHARS) })
    expect(() => long.add({ index: 0, arguments: 'x' })).toThrow(RangeError)
  })
})
