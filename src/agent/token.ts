import { createHash, randomBytes } from 'node:crypto';

/** SHA-256 of the token; the only form in which a token is stored. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function newToken(): string {
  return `rt_${randomBytes(32).toString('base64url')}`;
}
