// HTTP transport of the typed client: one POST per operation with a bearer token. Browser-safe (fetch,
// no node imports): the dashboard, agents, the demo, experiments and tests all send through it.
import { print } from '@0no-co/graphql.web';
import type { DocumentNode } from '@0no-co/graphql.web';
import type { AnyDocument, Checked, ResultOf, VariablesOf } from './graphql.js';

/** One GraphQL error as it comes over the wire. */
export interface WireError {
  message: string;
  path?: ReadonlyArray<string | number>;
  extensions?: { code?: string; field?: string; requestId?: string; [k: string]: unknown };
}

/** The whole answer: tests read status, headers and errors; callers that want only data use dataOf. */
export interface GqlResponse<T> {
  status: number;
  headers: Headers;
  data: T | null | undefined;
  errors: WireError[] | undefined;
  /** The parsed body (an array for a batched request, `{ text }` when it was not JSON). */
  body: unknown;
}

/** An error the API answered with; `code` is the first error's extensions.code (BAD_USER_INPUT, FORBIDDEN, …). */
export class RetractApiError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
    readonly field: string | undefined,
    readonly errors: WireError[],
    readonly status?: number,
  ) {
    super(message);
    this.name = 'RetractApiError';
  }

  /** The token is missing, wrong or revoked: signing in again is the only remedy. */
  get unauthenticated(): boolean {
    return (
      this.status === 401 ||
      this.errors.some((e) => e.extensions?.code === 'UNAUTHENTICATED' || e.extensions?.code === 'UNAUTHORIZED')
    );
  }
}

export interface PostOptions {
  token?: string | null;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** The browser sends no cookies: the bearer token is the only credential. */
  credentials?: RequestInit['credentials'];
}

const printed = new WeakMap<object, string>();

/** The text sent for a document (printed once per document object). */
export function queryText(document: AnyDocument | DocumentNode | string): string {
  if (typeof document === 'string') return document;
  let text = printed.get(document);
  if (text === undefined) printed.set(document, (text = print(document as DocumentNode)));
  return text;
}

/** A typed document's operation name; an untyped one is sent as written (hostile tests choose what they send). */
function operationName(document: AnyDocument | string): string | undefined {
  if (typeof document === 'string') return undefined;
  const op = (document as DocumentNode).definitions.find((d) => d.kind === 'OperationDefinition');
  return op && 'name' in op ? op.name?.value : undefined;
}

/** POSTs a body as it is (a batch, a malformed body) and parses the answer. */
export async function postRaw(url: string, body: string, opts: PostOptions = {}): Promise<GqlResponse<unknown>> {
  const res = await (opts.fetch ?? fetch)(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...opts.headers,
    },
    body,
    signal: opts.signal,
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = { text };
  }
  const single = Array.isArray(parsed) ? undefined : (parsed as { data?: unknown; errors?: WireError[] } | null);
  return { status: res.status, headers: res.headers, data: single?.data, errors: single?.errors, body: parsed };
}

/** Sends one typed operation; the answer is typed by the document. Never throws on a GraphQL error. */
export async function post<D extends AnyDocument>(
  url: string,
  document: D & Checked<D>,
  variables: VariablesOf<D>,
  opts?: PostOptions,
): Promise<GqlResponse<ResultOf<D>>>;
/** Sends an untyped document (hostile tests send what no schema types). */
export async function post(
  url: string,
  document: string,
  variables?: Record<string, unknown>,
  opts?: PostOptions,
): Promise<GqlResponse<unknown>>;
export async function post(
  url: string,
  document: AnyDocument | string,
  variables: unknown = {},
  opts: PostOptions = {},
): Promise<GqlResponse<unknown>> {
  return postRaw(
    url,
    JSON.stringify({ query: queryText(document), variables: variables ?? {}, operationName: operationName(document) }),
    opts,
  );
}

/** The data of an answer, or RetractApiError with the server's first code when it carries errors or no data. */
export function dataOf<T>(r: GqlResponse<T>): T {
  if (r.errors?.length) {
    const e = r.errors[0]!;
    throw new RetractApiError(
      r.errors.map((x) => x.message).join('; '),
      e.extensions?.code,
      e.extensions?.field,
      r.errors,
      r.status,
    );
  }
  if (r.data == null) throw new RetractApiError(`HTTP ${r.status} with no data`, undefined, undefined, [], r.status);
  return r.data;
}
