// Small real files for the attachment tests, made here rather than shipped:
// a PNG of any size (valid chunks and CRCs, so any reader takes it), a
// one-page PDF with a line of text, and a zip that unpacks to far more than it
// weighs (a zip bomb, in miniature).
import { deflateSync } from 'node:zlib'
import { zipSync } from 'fflate'

function chunk(type: string, data: Uint8Array): Uint8Array {
  const body = new Uint8Array([...new TextEncoder().encode(type), ...data])
  // Length, type and data, CRC: 4 + body.length + 4 bytes.
  const out = new Uint8Array(4 + body.length + 4)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  out.set(body, 4)
  view.setUint32(4 + body.length, Bun.hash.crc32(body))
  return out
}

/** A grey PNG of width × height pixels. */
export function png(width: number, height: number): Uint8Array {
  const header = new Uint8Array(13)
  const view = new DataView(header.buffer)
  view.setUint32(0, width)
  view.setUint32(4, height)
  header.set([8, 0, 0, 0, 0], 8) // 8-bit greyscale, no interlace
  const rows = new Uint8Array((width + 1) * height).fill(128)
  for (let row = 0; row < height; row++) rows[row * (width + 1)] = 0 // filter byte
  return new Uint8Array([
    ...[137, 80, 78, 71, 13, 10, 26, 10],
    ...chunk('IHDR', header),
    ...chunk('IDAT', new Uint8Array(deflateSync(rows))),
    ...chunk('IEND', new Uint8Array(0)),
  ])
}

/** A one-page PDF showing text (ASCII, no parentheses or backslashes). */
export function pdf(text: string): Uint8Array {
  const stream = `BT /F1 18 Tf 20 100 Td (${text}) Tj ET`
  return new TextEncoder().encode(`%PDF-1.4
1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj
2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj
3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 600 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >> endobj
4 0 obj << /Length ${stream.length} >> stream
${stream}
endstream endobj
5 0 obj << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> endobj
trailer << /Root 1 0 R >>
%%EOF
`)
}

/** A zip of a few KB holding `megabytes` MB of zeros. */
export function zipBomb(megabytes: number): Uint8Array {
  return zipSync({ 'zeros.txt': new Uint8Array(megabytes * 2 ** 20) }, { level: 9 })
}
