// HTTP GraphQL client (POST /graphql, Authorization: Bearer <token>). The token lives in memory, mirrored to
// sessionStorage so a reload of this tab keeps the session; it is never put in the URL or the page.

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

export function httpEndpoint(): string {
  return new URL('/graphql', location.href).toString();
}

export function wsEndpoint(): string {
  const u = new URL('/graphql', location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

export interface GraphQLErrorLike {
  message: string;
  path?: readonly (string | number)[];
  extensions?: Record<string, unknown>;
}

export class GraphQLRequestError extends Error {
  constructor(
    message: string,
    readonly errors: GraphQLErrorLike[] = [],
    readonly status?: number,
  ) {
    super(message);
    this.name = 'GraphQLRequestError';
  }

  get unauthenticated(): boolean {
    return (
      this.status === 401 ||
      this.errors.some((e) => {
        const code = e.extensions?.code;
        return code === 'UNAUTHENTICATED' || code === 'UNAUTHORIZED';
      })
    );
  }
}

function operationName(query: string): string | undefined {
  return /^\s*(?:query|mutation|subscription)\s+(\w+)/.exec(query)?.[1];
}

export async function gql<T>(query: string, variables: Record<string, unknown> = {}, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/graphql-response+json, application/json',
  };
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(httpEndpoint(), {
      method: 'POST',
      headers,
      body: JSON.stringify({ query, variables, operationName: operationName(query) }),
      signal,
      credentials: 'omit',
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new GraphQLRequestError(`Network error: ${(err as Error).message}`);
  }
  type Body = { data?: T | null; errors?: GraphQLErrorLike[] };
  let body: Body | null = null;
  try {
    body = (await res.json()) as Body;
  } catch {
    body = null;
  }
  const errors = body?.errors ?? [];
  if (errors.length) {
    throw new GraphQLRequestError(errors.map((e) => e.message).join('; '), errors, res.status);
  }
  if (!res.ok || !body || body.data == null) {
    throw new GraphQLRequestError(`HTTP ${res.status} ${res.statusText}`.trim(), [], res.status);
  }
  return body.data;
}
