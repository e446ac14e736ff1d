import { decodeGlobalID } from '@pothos/plugin-relay';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

/** One GraphQL error as it comes over the wire. */
export interface WireError {
  message: string;
  path?: Array<string | number>;
  extensions?: { code?: string; field?: string; requestId?: string; [k: string]: unknown };
}

export interface GqlResponse<T = any> {
  status: number;
  headers: Headers;
  data: T | null | undefined;
  errors: WireError[] | undefined;
  /** The parsed body (an array for a batched request). */
  body: any;
}

/** POSTs one operation to the server over real HTTP (fetch), with a bearer token when given. */
export async function gql<T = any>(url: string, query: string, variables: Record<string, unknown> = {}, token?: string | null, headers: Record<string, string> = {}): Promise<GqlResponse<T>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return wrap<T>(res);
}

/** POSTs a raw body (string or JSON-able) and parses the answer. */
export async function gqlRaw(url: string, body: string, token?: string | null, headers: Record<string, string> = {}): Promise<GqlResponse> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body,
  });
  return wrap(res);
}

async function wrap<T>(res: Response): Promise<GqlResponse<T>> {
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = { text };
  }
  return { status: res.status, headers: res.headers, data: Array.isArray(body) ? undefined : body?.data, errors: Array.isArray(body) ? undefined : body?.errors, body };
}

/** Server logs a test server registers, so a failed request can be explained by what the server logged for its request id. */
export const serverLogs = new Set<{ lines: Array<Record<string, unknown>> }>();

/** Throws with the server's errors (and the server's log lines for a masked error's request id) unless the response carries data and no errors. */
export function ok<T>(r: GqlResponse<T>): T {
  if (r.errors?.length || !r.data) {
    const ids = (r.errors ?? []).map((e) => e.extensions?.requestId).filter(Boolean);
    const logged = [...serverLogs].flatMap((l) => l.lines.filter((x) => ids.includes(x.requestId as string)));
    throw new Error(`GraphQL request failed (${r.status}): ${JSON.stringify(r.errors ?? r.body)}${logged.length ? `\nserver log: ${JSON.stringify(logged)}` : ''}`);
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
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${JSON.stringify({ results: this.results.slice(-20), failures: this.failures.map(String), completed: this.completed })}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }
}

/** A graphql-ws client over a real WebSocket (the `ws` package), authenticated by connectionParams. */
export function wsClient(url: string, token?: string | null): Client {
  return createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams: token ? { authorization: `Bearer ${token}` } : {},
    retryAttempts: 0,
    lazy: true,
    lazyCloseTimeout: 0,
  });
}

export interface Subscription<T> extends Collector<T> {
  close(): Promise<void>;
}

/** Subscribes over graphql-ws; the collector gathers every result. close() unsubscribes (and closes a client it made). */
export function subscribeWs<T = any>(target: string | Client, query: string, variables: Record<string, unknown> = {}, token?: string | null): Collector<T> & { close(): Promise<void> } {
  const own = typeof target === 'string';
  const client = typeof target === 'string' ? wsClient(target, token) : target;
  const c = new Collector<T>() as Collector<T> & { close(): Promise<void> };
  const unsubscribe = client.subscribe<T>(
    { query, variables },
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
export function subscribeSse<T = any>(url: string, query: string, variables: Record<string, unknown> = {}, token?: string | null, opts: { paused?: boolean } = {}) {
  const c = new Collector<T>() as Collector<T> & { close(): Promise<void>; resume(): void; response: Promise<Response> };
  const abort = new AbortController();
  let resumed!: () => void;
  const go = new Promise<void>((r) => (resumed = r));
  if (!opts.paused) resumed();
  c.resume = () => resumed();
  c.response = fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
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
export const RETRACTION_EVENTS = /* GraphQL */ `
  subscription Events($after: String) {
    retractionEvents(after: $after) {
      __typename cursor at
      retraction { id root { id claimKey } }
      ... on BeliefRetracted { depth belief { id claimKey status } }
      ... on EffectCancelled { effect { id status kind } }
      ... on ReversalRecorded { reversal { id status amount { amountMinor currency } effect { id kind } } }
      ... on RetractionCommitted { totals { beliefsRetracted effectsCancelled effectsReached reversalsOwed unreachable
        exposure { amountMinor currency } owed { amountMinor currency } unreachableAmount { amountMinor currency } settled { amountMinor currency } } }
    }
  }`;

export interface StreamedEvent {
  __typename: 'RetractionStarted' | 'BeliefRetracted' | 'EffectCancelled' | 'ReversalRecorded' | 'RetractionCommitted';
  cursor: string;
  at: string;
  retraction: { id: string; root: { id: string; claimKey: string } };
  depth?: number;
  belief?: { id: string; claimKey: string; status: string };
  effect?: { id: string; status: string; kind: string };
  reversal?: { id: string; status: string; amount: { amountMinor: number; currency: string } | null; effect: { id: string; kind: string } };
  totals?: Record<string, unknown>;
}

/** The events of a retractionEvents collector. */
export function streamed(c: Collector<{ retractionEvents: StreamedEvent }>): StreamedEvent[] {
  return c.events.map((e) => e.retractionEvents);
}
