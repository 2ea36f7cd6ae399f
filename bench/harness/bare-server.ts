// The reference of every request scenario: a minimal Elysia app, started by
// the harness beside the service (bare.ts), that answers GET /bytes/<n> with a
// fixed JSON document of exactly n bytes. Whatever the service does beyond
// this is what a scenario's ratio to it measures. Prints its port.
import { Elysia } from 'elysia'

const MAX_BYTES = 16 * 2 ** 20
const documents = new Map<number, string>()

/** `{"pad":"xxx…"}` of exactly n bytes (at least the 10 of an empty one). */
function documentOf(n: number): string {
  let document = documents.get(n)
  if (document === undefined) {
    document = `{"pad":"${'x'.repeat(Math.max(0, n - 10))}"}`
    documents.set(n, document)
  }
  return document
}

const headers = { 'content-type': 'application/json' }
const app = new Elysia().get('/bytes/:n', ({ params }) => {
  const n = Number(params.n)
  if (!Number.isInteger(n) || n < 0 || n > MAX_BYTES)
    return new Response('bad size', { status: 400 })
  return new Response(documentOf(n), { headers })
})
app.listen({ port: 0, hostname: '127.0.0.1' })
console.log(String(app.server?.port))
