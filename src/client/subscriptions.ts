// Subscriptions of the typed client over graphql-ws on the same /graphql path, authenticated by
// connectionParams (the server reads the bearer token there). Browser-safe: the WebSocket
// implementation is the browser's unless one is given (node.ts gives the `ws` package's).
import { createClient, type Client, type ClientOptions, type FormattedExecutionResult } from 'graphql-ws';
import { queryText } from './transport.js';
import type { AnyDocument, Checked, ResultOf, VariablesOf } from './graphql.js';

/** The ws:// (or wss://) URL of an http(s):// GraphQL endpoint. */
export function wsUrl(httpUrl: string): string {
  return httpUrl.replace(/^http/, 'ws');
}

/** A graphql-ws client acting with `token` (no connectionParams without one). Options override the defaults. */
export function wsClient(url: string, token?: string | null, opts: Partial<ClientOptions> = {}): Client {
  return createClient({
    url,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
    ...opts,
  });
}

export interface SubscribeSink<T> {
  next: (result: FormattedExecutionResult<T>) => void;
  error?: (error: unknown) => void;
  complete?: () => void;
}

/**
 * Subscribes with a typed document; returns the function that unsubscribes. The payload object is
 * returned too, because graphql-ws re-sends that same object after a reconnect: a caller that
 * updates `payload.variables` (a resume cursor) resumes where it left off.
 */
export function subscribe<D extends AnyDocument>(
  client: Client,
  document: D & Checked<D>,
  variables: VariablesOf<D>,
  sink: SubscribeSink<ResultOf<D>>,
): { unsubscribe: () => void; payload: { query: string; variables: VariablesOf<D> } } {
  const payload = { query: queryText(document), variables };
  const unsubscribe = client.subscribe<ResultOf<D>>(payload as { query: string; variables: Record<string, unknown> }, {
    next: sink.next,
    error: (e) => sink.error?.(e),
    complete: () => sink.complete?.(),
  });
  return { unsubscribe, payload };
}

/** The results of a typed subscription as an async iterator (return() unsubscribes). */
export function iterate<D extends AnyDocument>(
  client: Client,
  document: D & Checked<D>,
  variables: VariablesOf<D>,
): AsyncIterableIterator<FormattedExecutionResult<ResultOf<D>, unknown>> {
  return client.iterate<ResultOf<D>>({ query: queryText(document), variables: variables as Record<string, unknown> });
}
