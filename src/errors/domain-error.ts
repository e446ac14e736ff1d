/**
 * Expected failures a caller can act on. The API maps `code` to `extensions.code`; anything that is
 * not a DomainError is unexpected and gets masked.
 */
export type DomainErrorCode = 'BAD_USER_INPUT' | 'NOT_FOUND' | 'CONFLICT' | 'FORBIDDEN' | 'UNAUTHENTICATED';

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    /** The input field at fault (dotted path), when one is. */
    readonly field?: string,
    /** More for the caller to act on, added to the GraphQL error's extensions (e.g. the effect a key already names). */
    readonly extensions?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const badInput = (field: string, rule: string) => new DomainError('BAD_USER_INPUT', `${field}: ${rule}`, field);
/** NOT_FOUND for an id that names nothing the caller may see (another fleet's rows included); names the input field when given. */
export const notFound = (what: string, id: string, field?: string) =>
  new DomainError('NOT_FOUND', `${field ? `${field}: ` : ''}${what} ${id} not found`, field);
