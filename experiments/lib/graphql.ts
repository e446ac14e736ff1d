/**
 * A tiny GraphQL client for experiments: queries and mutations over HTTP (fetch), subscriptions over
 * graphql-ws. Each client speaks for one agent (one bearer token), exactly as an agent process would.
 */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** A GraphQL error answer, with the server's extensions.code (BAD_USER_INPUT, CONFLICT, …). */
export class GraphQLRequestError extends Error {
  constructor(
    readonly operation: string,
    readonly errors: Array<{ message: string; extensions?: { code?: string } }>,
  ) {
    super(`${operation}: ${errors.map((e) => `${e.extensions?.code ?? 'ERROR'}: ${e.message}`).join('; ')}`);
  }
  get code(): string | undefined {
    return this.errors[0]?.extensions?.code;
  }
}

export interface GqlClient {
  readonly token: string;
  /** Runs one operation; resolves with `data`, rejects with GraphQLRequestError when the answer has errors. */
  request<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>): Promise<T>;
}

/** A client for `baseUrl` (http://host:port) acting with `token`. */
export function gqlClient(baseUrl: string, token: string): GqlClient {
  const endpoint = `${baseUrl}/graphql`;
  return {
    token,
    async request<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
      const res = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query, variables }),
      });
      const op = /\b(query|mutation)\s+(\w+)/.exec(query)?.[2] ?? 'operation';
      const text = await res.text();
      let body: { data?: T; errors?: Array<{ message: string; extensions?: { code?: string } }> };
      try {
        body = JSON.parse(text);
      } catch {
        throw new Error(`${op}: HTTP ${res.status} with a non-JSON body: ${text.slice(0, 200)}`);
      }
      if (body.errors?.length) throw new GraphQLRequestError(op, body.errors);
      if (body.data === undefined) throw new Error(`${op}: HTTP ${res.status} without data`);
      return body.data;
    },
  };
}

export interface Subscription<T> {
  /** Every payload received so far, in order. */
  readonly received: T[];
  /** Resolves with the first received payload matching `pred` (already received ones included); rejects after `ms`. */
  waitFor(pred: (e: T) => boolean, ms: number): Promise<T>;
  close(): Promise<void>;
}

/**
 * Holds one graphql-ws subscription for `token` (authorization sent in connectionParams, as the
 * server expects) and records every payload. Errors from the server reject pending waits.
 */
export function subscribe<T>(baseUrl: string, token: string, query: string, variables: Record<string, unknown>, pick: (data: Record<string, unknown>) => T): Subscription<T> {
  const client: Client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
  });
  const received: T[] = [];
  const waiters = new Set<{ pred: (e: T) => boolean; resolve: (e: T) => void; reject: (e: Error) => void }>();
  let failure: Error | null = null;
  const fail = (e: Error) => {
    failure = e;
    for (const w of waiters) w.reject(e);
    waiters.clear();
  };
  const unsubscribe = client.subscribe<Record<string, unknown>>(
    { query, variables },
    {
      next: (msg) => {
        if (msg.errors?.length) return fail(new Error(`subscription error: ${msg.errors.map((e) => e.message).join('; ')}`));
        const e = pick(msg.data ?? {});
        received.push(e);
        for (const w of [...waiters]) {
          if (w.pred(e)) {
            waiters.delete(w);
            w.resolve(e);
          }
        }
      },
      error: (err) => fail(err instanceof Error ? err : new Error(`subscription failed: ${JSON.stringify(err)}`)),
      complete: () => {},
    },
  );
  return {
    received,
    waitFor(pred, ms) {
      const hit = received.find(pred);
      if (hit !== undefined) return Promise.resolve(hit);
      if (failure) return Promise.reject(failure);
      return new Promise<T>((resolve, reject) => {
        const w = { pred, resolve, reject };
        waiters.add(w);
        setTimeout(() => {
          if (waiters.delete(w)) reject(new Error(`no matching subscription event within ${ms} ms (received ${received.length})`));
        }, ms).unref();
      });
    },
    async close() {
      unsubscribe();
      await client.dispose();
    },
  };
}
