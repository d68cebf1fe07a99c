/**
 * Comparing secrets without leaking them through timing. `crypto.timingSafeEqual` needs inputs of
 * equal length, and comparing lengths first would itself leak the secret's length, so both sides
 * are hashed to fixed-size digests and the digests are compared.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

function digestOf(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** True when `given` equals `expected`, in time that does not depend on where they differ. */
export function isSameSecret(given: string, expected: string): boolean {
  return timingSafeEqual(digestOf(given), digestOf(expected));
}

/** The token of an `Authorization: Bearer <token>` header, or null when there is none. */
export function bearerTokenOf(header: string | undefined): string | null {
  if (header === undefined) return null;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Checks an `Authorization` header against the expected bearer token. Both the missing-header
 * and the wrong-token cases answer the same way, so a caller learns nothing about the token.
 */
export function isBearerAccepted(header: string | undefined, expected: string): boolean {
  const token = bearerTokenOf(header) ?? '';
  // Always compare, even when the header is missing, so both paths cost the same.
  const isSame = isSameSecret(token, expected);
  return token !== '' && isSame;
}

/** Basic-auth credentials check: both parts are always compared (no short-circuit on the user). */
export function isSameCredentials(given: { user: string; password: string }, expected: { user: string; password: string }): boolean {
  const isUser = isSameSecret(given.user, expected.user);
  const isPassword = isSameSecret(given.password, expected.password);
  return isUser && isPassword;
}

/** A secret as the ops server holds it: fixed, or read again as its `*_FILE` changes (config/secret-file.ts). */
export type SecretSource = string | { current(): string };

/** The secret's value now. */
export function secretNow(secret: SecretSource): string {
  return typeof secret === 'string' ? secret : secret.current();
}
