// snippetOf: the text around the first match, on one line, cut at whole
// characters, with … where text was left out.
import { expect, test } from 'bun:test'
import { snippetOf } from '../../src/conversation/management/snippet.ts'

test('a short text is the snippet itself, on one line', () => {
  expect(snippetOf('Plans for\n\nKyoto  trip', 'kyoto')).toBe('Plans for Kyoto trip')
})

test('a match deep in a long text is shown with the text around it', () => {
  const text = `${'a'.repeat(500)} the NEEDLE is here ${'b'.repeat(500)}`
  const snippet = snippetOf(text, 'needle')
  expect(snippet.startsWith('…')).toBe(true)
  expect(snippet.endsWith('…')).toBe(true)
  expect(snippet).toContain('the NEEDLE is here')
  expect(snippet.indexOf('NEEDLE')).toBeGreaterThan(30)
  expect(Array.from(snippet).length).toBeLessThanOrEqual(162)
})

test('a match near the end shows the end, and one at the start shows the start', () => {
  const tail = snippetOf(`${'x'.repeat(400)}the end`, 'END')
  expect(tail.startsWith('…')).toBe(true)
  expect(tail.endsWith('the end')).toBe(true)
  const head = snippetOf(`start here ${'y'.repeat(400)}`, 'START')
  expect(head.startsWith('start here')).toBe(true)
  expect(head.endsWith('…')).toBe(true)
})

test('characters outside the BMP are never cut in half, and regex characters are literal', () => {
  const text = `${'😀'.repeat(300)} a+b(c) ${'😀'.repeat(300)}`
  const snippet = snippetOf(text, 'A+B(C)')
  expect(snippet).toContain('a+b(c)')
  expect(snippet).not.toMatch(
    /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
  )
})

test('a text without the match (a title matched instead) starts at the top', () => {
  expect(snippetOf(`${'word '.repeat(100)}`, 'absent').startsWith('word word')).toBe(true)
})
