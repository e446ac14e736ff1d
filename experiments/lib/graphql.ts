/**
 * A recording subscription for experiments over the typed client's graphql-ws transport
 * (src/client): each subscription speaks for one agent (one bearer token), exactly as an agent
 * process would, and keeps every payload so a run can ask afterwards who was told what, and when.
 */
import {
  subscribe as clientSubscribe,
  wsClient,
  wsUrl,
  type AnyDocument,
  type Checked,
  type ResultOf,
  type VariablesOf,
} from '../../src/client/node';

export interface Subscription<T> {
  /** Every payload received so far, in order. */
  readonly received: T[];
  /** Resolves with the first received payload matching `pred` (already received ones included); rejects after `ms`. */
  waitFor(pred: (e: T) => boolean, ms: number): Promise<T>;
  close(): Promise<void>;
}

/**
 * Holds one graphql-ws subscription to `url` (the /graphql endpoint) for `token` and records every
 * payload as `pick` maps it. Errors from the server reject pending waits.
 */
export function subscribe<D extends AnyDocument, T>(
  url: string,
  token: string,
  document: D & Checked<D>,
  variables: VariablesOf<D>,
  pick: (data: ResultOf<D>) => T,
): Subscription<T> {
  const client = wsClient(wsUrl(url), token, { lazy: false });
  const received: T[] = [];
  const waiters = new Set<{ pred: (e: T) => boolean; resolve: (e: T) => void; reject: (e: Error) => void }>();
  let failure: Error | null = null;
  const fail = (e: Error) => {
    failure = e;
    for (const w of waiters) w.reject(e);
    waiters.clear();
  };
  const { unsubscribe } = clientSubscribe(client, document, variables, {
    next: (msg) => {
      if (msg.errors?.length)
        return fail(new Error(`subscription error: ${msg.errors.map((e) => e.message).join('; ')}`));
      if (!msg.data) return;
      const e = pick(msg.data);
      received.push(e);
      for (const w of [...waiters]) {
        if (w.pred(e)) {
          waiters.delete(w);
          w.resolve(e);
        }
      }
    },
    error: (err) => fail(err instanceof Error ? err : new Error(`subscription failed: ${JSON.stringify(err)}`)),
  });
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
          if (waiters.delete(w))
            reject(new Error(`no matching subscription event within ${ms} ms (received ${received.length})`));
        }, ms).unref();
      });
    },
    async close() {
      unsubscribe();
      await client.dispose();
    },
  };
}
