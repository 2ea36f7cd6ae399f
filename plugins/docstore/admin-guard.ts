// Who may flush the cache (CONTRACT §6): with ADMIN_TOKEN set, only a caller
// presenting it as a bearer token; in production without a token, nobody;
// otherwise (development) anyone.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { Config } from '../../src/config.ts'
import { forbidden, unauthorized } from '../../src/errors.ts'

// Hashing both sides first gives equal lengths, so the comparison time says
// nothing about the token.
const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest()

function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
  return match?.[1]
}

/** Throws 401/403 AppErrors unless the caller may run an admin operation. */
export function requireAdmin(
  config: Pick<Config, 'adminToken' | 'appEnv'>,
  authorization: string | undefined,
): void {
  if (config.adminToken === undefined) {
    if (config.appEnv === 'production')
      throw forbidden('Clearing the cache is disabled in production until ADMIN_TOKEN is set.')
    return
  }
  const token = bearerToken(authorization)
  if (token === undefined || !timingSafeEqual(digest(token), digest(config.adminToken)))
    throw unauthorized('Clearing the cache needs "Authorization: Bearer <ADMIN_TOKEN>".')
}
