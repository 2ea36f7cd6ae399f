// Runs in a Worker (pdf-text.ts): extracts a PDF's text with unpdf (Mozilla's
// pdf.js), so a PDF that takes forever to parse blocks only this thread, which
// the caller terminates at its deadline.
import { extractText, getDocumentProxy } from 'unpdf'

declare const self: Worker

self.onmessage = async (event: MessageEvent<{ bytes: Uint8Array; maxChars: number }>) => {
  const { bytes, maxChars } = event.data
  try {
    // verbosity 0: pdf.js would print its repairs of a damaged file to the console.
    const pdf = await getDocumentProxy(bytes, { verbosity: 0 })
    const { text } = await extractText(pdf, { mergePages: true })
    self.postMessage({ ok: true, text: text.slice(0, maxChars) })
  } catch {
    self.postMessage({ ok: false })
  }
}
