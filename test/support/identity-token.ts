// The identity a front end sends when the service runs with AUTH_JWT_SECRET
// (CONTRACT §2): an HS256 token naming the user in `sub`, valid for an hour,
// as an Authorization header.
import { SignJWT } from 'jose'

/** `{ authorization: 'Bearer …' }` for `user`, signed with `secret`. */
export async function bearerFor(user: string, secret: string): Promise<{ authorization: string }> {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(user)
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(secret))
  return { authorization: `Bearer ${token}` }
}
