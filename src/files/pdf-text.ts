// A PDF's text, extracted once at upload (CONTRACT §20) in a Worker with a
// deadline: a PDF built to never finish parsing, or to expand into far more
// text than it holds, costs at most the deadline and maxChars of text, and the
// worker (its heap with it) is thrown away either way.
import { invalid } from '../errors.ts'

export interface PdfTextOptions {
  timeoutMs: number
  /** Text past this many characters is dropped. */
  maxChars: number
}

const unreadable = (why: string) => invalid(`The PDF could not be read: ${why}.`, 'file_unreadable')

/** The PDF's text; `invalid` (422, `file_unreadable`) when it cannot be read in time. */
export function extractPdfText(bytes: Uint8Array, options: PdfTextOptions): Promise<string> {
  const worker = new Worker(new URL('./pdf-text-worker.ts', import.meta.url).href)
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => finish(() => reject(unreadable(`it took longer than ${options.timeoutMs} ms`))),
      options.timeoutMs,
    )
    const finish = (settle: () => void) => {
      clearTimeout(timer)
      worker.terminate()
      settle()
    }
    worker.onmessage = (event: MessageEvent<{ ok: boolean; text?: string }>) =>
      finish(() =>
        event.data.ok
          ? resolve(event.data.text ?? '')
          : reject(unreadable('it is damaged or not a PDF')),
      )
    worker.onerror = () => finish(() => reject(unreadable('it is damaged or not a PDF')))
    // A copy: the caller keeps its bytes to store them.
    worker.postMessage({ bytes: bytes.slice(), maxChars: options.maxChars })
  })
}
