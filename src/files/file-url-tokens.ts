// Signed, expiring tokens for the folder store's URLs (CONTRACT §20): an HS256
// JWT naming one key, the one method it allows, and for an upload the most
// bytes it takes. The folder's upload and download URLs are this service's own
// routes carrying such a token, as S3's carry the store's signature.
import { jwtVerify } from 'jose'
import { unauthenticated } from '../errors.ts'
import { hs256Signer, importHs256Key, lifetime } from '../hmac-key.ts'

export interface FileUrlClaims {
  key: string
  method: 'PUT' | 'GET'
  /** PUT: the most bytes accepted. */
  maxBytes?: number
  /** GET: the content type served. */
  type?: string
}

export interface FileUrlTokens {
  sign(claims: FileUrlClaims, expiresInSeconds: number): string
  /**
   * The claims of a valid, unexpired token for method; `unauthenticated`
   * (401) for a bad, tampered, expired or wrongly signed one, or one for the
   * other method.
   */
  verify(token: string, method: 'PUT' | 'GET'): Promise<FileUrlClaims>
}

/** Audience of these tokens, so no other token of the same secret passes for one. */
const AUDIENCE = 'conduit-file-url'

export function createFileUrlTokens(secret: string): FileUrlTokens {
  const key = importHs256Key(secret)
  const signed = hs256Signer(secret)
  return {
    sign(claims, expiresInSeconds) {
      return signed({
        k: claims.key,
        m: claims.method,
        ...(claims.maxBytes === undefined ? {} : { n: claims.maxBytes }),
        ...(claims.type === undefined ? {} : { t: claims.type }),
        aud: AUDIENCE,
        ...lifetime(expiresInSeconds),
      })
    },
    async verify(token, method) {
      try {
        const { payload } = await jwtVerify(token, await key, {
          algorithms: ['HS256'],
          audience: AUDIENCE,
        })
        const { k, m, n, t } = payload
        if (
          typeof k === 'string' &&
          m === method &&
          (n === undefined || typeof n === 'number') &&
          (t === undefined || typeof t === 'string')
        )
          return { key: k, method, maxBytes: n, type: t }
      } catch {
        // Fall through: every failure is the same answer to the client.
      }
      throw unauthenticated('The file URL is not valid or has expired.')
    },
  }
}
