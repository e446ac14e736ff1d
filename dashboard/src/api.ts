// The page's session over the typed client (src/client: POST /graphql, Authorization: Bearer <token>). The token
// lives in memory, mirrored to sessionStorage so a reload of this tab keeps the session; it is never put in the URL
// or the page.
import {
  dataOf,
  post,
  RetractApiError,
  type AnyDocument,
  type Checked,
  type ResultOf,
  type VariablesOf,
} from '../../src/client';

/** What a failed request throws; `unauthenticated` says the token is no longer good. */
export { RetractApiError as GraphQLRequestError };

const TOKEN_KEY = 'retract.dashboard.token';

let token: string | null = null;

export function loadToken(): string | null {
  try {
    token = sessionStorage.getItem(TOKEN_KEY);
  } catch {
    token = null;
  }
  return token;
}

export function setToken(t: string | null): void {
  token = t;
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    /* storage disabled: memory only */
  }
}

export function getToken(): string | null {
  return token;
}

function httpEndpoint(): string {
  return new URL('/graphql', location.href).toString();
}

export function wsEndpoint(): string {
  const u = new URL('/graphql', location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

/** Sends one typed document with the session's token; a network failure is a GraphQLRequestError too. */
export async function gql<D extends AnyDocument>(
  document: D & Checked<D>,
  variables: VariablesOf<D>,
  signal?: AbortSignal,
): Promise<ResultOf<D>> {
  try {
    return dataOf(await post(httpEndpoint(), document, variables, { token, signal, credentials: 'omit' }));
  } catch (err) {
    if (err instanceof RetractApiError || (err as Error).name === 'AbortError') throw err;
    throw new RetractApiError(`Network error: ${(err as Error).message}`, undefined, undefined, []);
  }
}
