// Who may flush the cache (CONTRACT §6): with ADMIN_TOKEN set, only a caller
// presenting it as a bearer token (src/http/admin-guard.ts); in production without
// a token, nobody; otherwise (development) anyone.

import type { Config } from '../../src/config.ts'
import { forbidden } from '../../src/errors.ts'
import { requireAdminToken } from '../../src/http/admin-guard.ts'

/** Throws `unauthenticated`/`forbidden` DomainErrors unless the caller may flush the cache. */
export function requireAdmin(
  config: Pick<Config, 'adminToken' | 'appEnv'>,
  authorization: string | undefined,
): void {
  if (config.adminToken === undefined && config.appEnv === 'production')
    throw forbidden('Clearing the cache is disabled in production until ADMIN_TOKEN is set.')
  requireAdminToken(config.adminToken, authorization, 'Clearing the cache')
}
