// An HS256 secret as a WebCrypto key, imported once: jose imports a raw byte
// key again on every sign and verify, which shows on the send path.

/** The key jose's HS256 sign and verify take, for secret (its UTF-8 bytes). */
export function importHs256Key(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  )
}
