// The one reading of `Authorization: Bearer <token>`, for user tokens
// (auth.ts) and the operator's ADMIN_TOKEN (admin-guard.ts) alike.

/** The token of an Authorization header value, or undefined when it is not `Bearer <token>`. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1]
}
