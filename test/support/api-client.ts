import { decodeGlobalID } from '@pothos/plugin-relay';
import type { Client } from 'graphql-ws';
import { graphql, MoneyFields, TotalsFields } from '../../src/client';
import {
  post,
  postRaw,
  queryText,
  wsClient as nodeWsClient,
  type AnyDocument,
  type Checked,
  type GqlResponse as ClientResponse,
  type ResultOf,
  type VariablesOf,
  type WireError,
} from '../../src/client/node';

export type { WireError };

/** An answer as tests read it: the client's response with the body left loose (tests probe odd bodies). */
export type GqlResponse<T = any> = Omit<ClientResponse<T>, 'body'> & { body: any };

/** POSTs one operation to the server over real HTTP through the typed client's transport, with a bearer token when given. */
export async function gql<D extends AnyDocument>(
  url: string,
  document: D & Checked<D>,
  variables: VariablesOf<D>,
  token?: string | null,
  headers?: Record<string, string>,
): Promise<GqlResponse<ResultOf<D>>>;
/** An untyped document: what hostile and limit tests send on purpose. */
export async function gql<T = any>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  token?: string | null,
  headers?: Record<string, string>,
): Promise<GqlResponse<T>>;
export async function gql(
  url: string,
  document: AnyDocument | string,
  variables: unknown = {},
  token?: string | null,
  headers: Record<string, string> = {},
): Promise<GqlResponse> {
  return post(url, document as string, variables as Record<string, unknown>, { token, headers });
}

/** POSTs a raw body (string or JSON-able) and parses the answer. */
export async function gqlRaw(
  url: string,
  body: string,
  token?: string | null,
  headers: Record<string, string> = {},
): Promise<GqlResponse> {
  return postRaw(url, body, { token, headers });
}

/** Server logs a test server registers, so a failed request can be explained by what the server logged for its request id. */
export const serverLogs = new Set<{ lines: Array<Record<string, unknown>> }>();

/** Throws with the server's errors (and the server's log lines for a masked error's request id) unless the response carries data and no errors. */
export function ok<T>(r: GqlResponse<T>): T {
  if (r.errors?.length || !r.data) {
    const ids = (r.errors ?? []).map((e) => e.extensions?.requestId).filter(Boolean);
    const logged = [...serverLogs].flatMap((l) => l.lines.filter((x) => ids.includes(x.requestId as string)));
    throw new Error(
      `GraphQL request failed (${r.status}): ${JSON.stringify(r.errors ?? r.body)}${logged.length ? `\nserver log: ${JSON.stringify(logged)}` : ''}`,
    );
  }
  return r.data;
}

/** The codes of the errors in a response (or of a subscription's errors). */
export function codes(errors: readonly WireError[] | undefined | null): string[] {
  return (errors ?? []).map((e) => String(e.extensions?.code));
}

/** The database id behind a relay global id, checked to be of `type`. */
export function dbId(globalId: string, type?: string): string {
  const d = decodeGlobalID(globalId);
  if (type && d.typename !== type) throw new Error(`expected a ${type} id, got ${d.typename}`);
  return d.id;
}

/**
 * A stream of subscription results, collected as they arrive. `until` waits for a condition on what
 * has arrived so far, failing with what did arrive when it times out.
 */
export class Collector<T = any> {
  readonly results: Array<{ data?: T | null; errors?: WireError[] }> = [];
  /** Errors the transport reported (a refused subscription, a closed socket). */
  readonly failures: unknown[] = [];
  completed = false;
  private waiters = new Set<() => void>();

  get events(): T[] {
    return this.results.filter((r) => r.data).map((r) => r.data as T);
  }

  get errors(): WireError[] {
    const fromResults = this.results.flatMap((r) => r.errors ?? []);
    const fromFailures = this.failures.flatMap((f) => (Array.isArray(f) ? (f as WireError[]) : []));
    return [...fromResults, ...fromFailures];
  }

  push(r: { data?: T | null; errors?: WireError[] }): void {
    this.results.push(r);
    this.poke();
  }

  fail(e: unknown): void {
    this.failures.push(e);
    this.completed = true;
    this.poke();
  }

  complete(): void {
    this.completed = true;
    this.poke();
  }

  private poke(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves once `cond` holds over what has arrived; rejects after `timeoutMs`. */
  async until(cond: (c: this) => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    if (cond(this)) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (cond(this)) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(
            `timed out after ${timeoutMs} ms waiting for ${what}; got ${JSON.stringify({ results: this.results.slice(-20), failures: this.failures.map(String), completed: this.completed })}`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(check);
    });
  }
}

/** A graphql-ws client over a real WebSocket (the `ws` package), authenticated by connectionParams. */
export function wsClient(url: string, token?: string | null): Client {
  return nodeWsClient(url, token, { retryAttempts: 0, lazy: true, lazyCloseTimeout: 0 });
}

interface Subscription<T> extends Collector<T> {
  close(): Promise<void>;
  /** Resolves once the server acknowledged the connection (graphql-ws ConnectionAck). */
  connected: Promise<void>;
}

/** Subscribes over graphql-ws; the collector gathers every result. close() unsubscribes (and closes a client it made). */
export function subscribeWs<T = any>(
  target: string | Client,
  query: string | AnyDocument,
  variables: Record<string, unknown> = {},
  token?: string | null,
): Subscription<T> {
  const own = typeof target === 'string';
  const client = typeof target === 'string' ? wsClient(target, token) : target;
  const c = new Collector<T>() as Subscription<T>;
  c.connected = new Promise<void>((resolve) => {
    const off = client.on('connected', () => {
      off();
      resolve();
    });
  });
  const unsubscribe = client.subscribe<T>(
    { query: queryText(query), variables },
    {
      next: (r) => c.push(r as { data?: T; errors?: WireError[] }),
      error: (e) => c.fail(e),
      complete: () => c.complete(),
    },
  );
  c.close = async () => {
    unsubscribe();
    if (own) await client.dispose();
  };
  return c;
}

/**
 * Subscribes over SSE: a fetch POST with `Accept: text/event-stream`, the body read as it streams
 * and split into `event:`/`data:` messages. With `paused`, nothing is read until resume() (a slow
 * subscriber: the server's writes back up behind it).
 */
export function subscribeSse<T = any>(
  url: string,
  query: string | AnyDocument,
  variables: Record<string, unknown> = {},
  token?: string | null,
  opts: { paused?: boolean } = {},
) {
  const c = new Collector<T>() as Collector<T> & {
    close(): Promise<void>;
    resume(): void;
    response: Promise<Response>;
  };
  const abort = new AbortController();
  let resumed!: () => void;
  const go = new Promise<void>((r) => (resumed = r));
  if (!opts.paused) resumed();
  c.resume = () => resumed();
  c.response = fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ query: queryText(query), variables }),
    signal: abort.signal,
  });
  void (async () => {
    try {
      const res = await c.response;
      await go;
      if (!res.body) return c.complete();
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const msg = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of msg.split('\n')) {
            if (line.startsWith(':')) continue;
            if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (event === 'complete') {
            c.complete();
            continue;
          }
          if (data.length === 0) continue;
          const parsed = JSON.parse(data.join('\n'));
          if (event === 'next' || event === 'message') c.push(parsed);
        }
      }
      c.complete();
    } catch (e) {
      if ((e as Error)?.name !== 'AbortError') c.fail(e);
      else c.complete();
    }
  })();
  c.close = async () => {
    abort.abort();
  };
  return c;
}

/** The retractionEvents selection every subscription test uses. */
export const RETRACTION_EVENTS = graphql(
  `
    subscription Events($after: String) {
      retractionEvents(after: $after) {
        __typename
        cursor
        at
        retraction {
          id
          root {
            id
            claimKey
          }
        }
        ... on BeliefRetracted {
          depth
          belief {
            id
            claimKey
            status
          }
        }
        ... on EffectCancelled {
          effect {
            id
            status
            kind
          }
        }
        ... on ReversalRecorded {
          reversal {
            id
            status
            amount {
              ...MoneyFields
            }
            effect {
              id
              kind
            }
          }
        }
        ... on RetractionCommitted {
          totals {
            ...TotalsFields
          }
        }
      }
    }
  `,
  [MoneyFields, TotalsFields],
);

type Variant = ResultOf<typeof RETRACTION_EVENTS>['retractionEvents'];
type AnyKey<U> = U extends unknown ? keyof U : never;
/** One streamed event: the fields every event has, and each variant's own fields as optional (tests compare whole lists). */
export type StreamedEvent = { [K in keyof Variant]: Variant[K] } & {
  [K in Exclude<AnyKey<Variant>, keyof Variant>]?: Variant extends infer V
    ? V extends { [P in K]: infer X }
      ? X
      : never
    : never;
};

/** The events of a retractionEvents collector. */
export function streamed(c: Collector<{ retractionEvents: StreamedEvent }>): StreamedEvent[] {
  return c.events.map((e) => e.retractionEvents);
}
