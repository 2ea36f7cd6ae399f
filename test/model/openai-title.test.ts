// The title in a model's answer (openai-title.ts): the shapes models wrap a
// title in are taken off; what is left is one line.
import { expect, test } from 'bun:test'
import { cleanTitle } from '../../src/conversation/model/openai-title.ts'

test.each([
  ['Planning a Trip to Kyoto', 'Planning a Trip to Kyoto'],
  ['"Planning a Trip to Kyoto"', 'Planning a Trip to Kyoto'],
  ['Title: "Planning a Trip"', 'Planning a Trip'],
  ['## Title: **Kyoto Plans**', 'Kyoto Plans'],
  ['“Kyoto in Spring.”', 'Kyoto in Spring'],
  ['Kyoto   in\tspring\nBecause you asked about Kyoto.', 'Kyoto in spring'],
  ['  \n', ''],
  ['""', ''],
])('%j → %j', (answer, title) => {
  expect(cleanTitle(answer)).toBe(title)
})
