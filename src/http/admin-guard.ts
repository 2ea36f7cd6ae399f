// Operations only an operator may run (`DELETE /cache`, `GET /metrics`): with
// ADMIN_TOKEN set, the caller must present it as a bearer token. Compared in
// constant time, so the answer's timing says nothing about the token.
import { createHash, timingSafeEqual } from 'node:crypto'
import { unauthenticated } from '../errors.ts'
import { bearerToken } from './bearer-token.ts'

// Hashing both sides first gives equal lengths for timingSafeEqual.
const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest()

/**
 * Throws an `unauthenticated` DomainError unless ADMIN_TOKEN is unset or the Authorization
 * header carries it; `action` completes "… needs Authorization: Bearer".
 */
export function requireAdminToken(
  adminToken: string | undefined,
  authorization: string | null | undefined,
  action: string,
): void {
  if (adminToken === undefined) return
  const token = bearerToken(authorization)
  if (token === undefined || !timingSafeEqual(digest(token), digest(adminToken)))
    throw unauthenticated(`${action} needs "Authorization: Bearer <ADMIN_TOKEN>".`)
}
