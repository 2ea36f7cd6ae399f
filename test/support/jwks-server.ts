// An identity provider's key endpoint for tests, run as a real process on
// loopback (test/support/jwks.ts starts it): GET /jwks.json serves the key
// set last PUT to /keys (none at first) and counts the fetches, which GET
// /fetches reports, so a test can rotate keys mid-run and see how often the
// service asked. It prints `listening <port>` once it listens on a port of
// its own choosing.
let keySet: unknown = { keys: [] }
let fetches = 0

const jwksServer = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    const { pathname } = new URL(request.url)
    if (request.method === 'GET' && pathname === '/jwks.json') {
      fetches++
      return Response.json(keySet)
    }
    if (request.method === 'PUT' && pathname === '/keys') {
      keySet = await request.json()
      return new Response(null, { status: 204 })
    }
    if (request.method === 'GET' && pathname === '/fetches') return Response.json({ fetches })
    return new Response('not found', { status: 404 })
  },
})

console.log(`listening ${jwksServer.port}`)

export {}
