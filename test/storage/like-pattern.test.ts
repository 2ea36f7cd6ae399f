// containsPattern: the question becomes a literal "contains" pattern.
import { describe, expect, test } from 'bun:test'
import { containsPattern } from '../../src/storage/like-pattern.ts'

describe('containsPattern', () => {
  test.each([
    ['cache', '%cache%'],
    ['50%', '%50\\%%'],
    ['a_b', '%a\\_b%'],
    ['C:\\dir', '%C:\\\\dir%'],
    ["it's", "%it's%"],
    ['', '%%'],
  ])('%p → %p', (question, pattern) => {
    expect(containsPattern(question)).toBe(pattern)
  })
})
