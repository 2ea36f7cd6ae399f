// A private certificate authority and a server certificate for 127.0.0.1,
// made with openssl in a temporary directory, for Redis servers the tests
// start with TLS (support/redis-deployments.ts). Only where openssl is
// installed (TLS_MISSING says so).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const OPENSSL = Bun.which('openssl')

/** Why TLS servers cannot be started here, or undefined when they can. */
export const TLS_MISSING = OPENSSL ? undefined : 'openssl is not installed'

export interface TestTls {
  /** Files a server is started with. */
  certFile: string
  keyFile: string
  caFile: string
  /** The CA's PEM, which clients trust. */
  caPem: string
  /** Removes the files. */
  remove(): void
}

function openssl(args: string[], cwd: string) {
  const run = Bun.spawnSync([OPENSSL ?? 'openssl', ...args], {
    cwd,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  if (run.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${run.stderr.toString()}`)
}

/** A CA and a certificate it signed for IP 127.0.0.1 (EC keys, valid a day). */
export function makeTestTls(): TestTls {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-tls-'))
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl(
    [
      'req',
      '-x509',
      ...key,
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '1',
      '-subj',
      '/CN=conduit test CA',
    ],
    dir,
  )
  openssl(
    ['req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'],
    dir,
  )
  writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1\n')
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.pem',
      '-days',
      '1',
      '-extfile',
      'san.cnf',
    ],
    dir,
  )
  return {
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    caFile: join(dir, 'ca.pem'),
    caPem: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}
