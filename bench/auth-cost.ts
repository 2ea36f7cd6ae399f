// What identifying a caller costs with AUTH_JWT_SECRET set, in process: CPU
// per Authenticator.userOf for a token it has verified before (remembered
// until its exp, src/http/auth.ts) against one it has not (a full HS256
// verification by jose), in rotating rounds, with the median of each.
//
//   bun run bench/auth-cost.ts [--calls=20000] [--rounds=5]
import { SignJWT } from 'jose'
import { createAuthenticator } from '../src/http/auth.ts'
import { wholeNumberFlag } from './cli-flags.ts'

const calls = wholeNumberFlag('calls', 20_000, { min: 1, max: 1_000_000 })
const rounds = wholeNumberFlag('rounds', 5, { min: 1, max: 50 })
const SECRET = 'auth-cost-benchmark-secret'
const exp = Math.floor(Date.now() / 1000) + 3600
const sign = (sub: string) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(SECRET))
const requestWith = (token: string) =>
  new Request('http://localhost/', { headers: { authorization: `Bearer ${token}` } })

// Signed before measuring: signing is the issuer's cost, not ours.
const fresh = await Promise.all(
  Array.from({ length: calls * (rounds + 1) }, (_, index) => sign(`user-${index}`)),
).then((tokens) => tokens.map(requestWith))
const known = requestWith(await sign('known-user'))
const auth = createAuthenticator({ jwtSecret: SECRET })
let next = 0

const cases = {
  'a token verified before': () => auth.userOf(known, undefined),
  'a token not seen before': () => auth.userOf(fresh[next++] as Request, undefined),
}

async function cpuPerCall(run: () => Promise<string>, count: number): Promise<number> {
  const started = process.cpuUsage()
  for (let index = 0; index < count; index++) await run()
  const used = process.cpuUsage(started)
  return (used.user + used.system) / count
}

const samples = new Map<string, number[]>(Object.keys(cases).map((name) => [name, []]))
for (const run of Object.values(cases)) await cpuPerCall(run, calls)
for (let round = 0; round < rounds; round++)
  for (const [name, run] of Object.entries(cases))
    samples.get(name)?.push(await cpuPerCall(run, calls))

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0
const load = (await Bun.file('/proc/loadavg').text()).split(' ').slice(0, 3).join(' ')
console.log(
  `## Bearer token cost, in process (${new Date().toISOString()}, Bun ${Bun.version}, ${navigator.hardwareConcurrency} CPUs, load average ${load})\n`,
)
console.log('| token | CPU µs per userOf (median of rounds) |\n|---|--:|')
for (const [name, values] of samples) console.log(`| ${name} | ${median(values).toFixed(2)} |`)
