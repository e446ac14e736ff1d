import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SCOPES } from '../../src/agent/scopes';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';
import { engines } from '../support/engines';

/** Every message a graphql-ws sink received for one operation, in order. */
interface Heard {
  kinds: Array<'next' | 'error' | 'complete'>;
  next: unknown[];
  error: unknown;
}

/** Subscribes with a real graphql-ws client and waits until the operation ends (error or complete) or `ms` pass. */
function hear(
  client: Client,
  query: string,
  variables: Record<string, unknown> = {},
  ms = 20_000,
): Promise<Heard & { stop(): void }> {
  const heard: Heard = { kinds: [], next: [], error: undefined };
  return new Promise((resolve) => {
    let stop = () => {};
    const done = () => resolve({ ...heard, stop });
    const timer = setTimeout(done, ms);
    stop = client.subscribe(
      { query, variables },
      {
        next: (r) => void (heard.kinds.push('next'), heard.next.push(r)),
        error: (e) => {
          heard.kinds.push('error');
          heard.error = e;
          clearTimeout(timer);
          done();
        },
        complete: () => {
          heard.kinds.push('complete');
          clearTimeout(timer);
          done();
        },
      },
    );
  });
}

/**
 * graphql-ws's protocol: an `error` message answers errors raised before execution (as validation
 * errors are) and ends the operation; `next` carries results of an operation that ran. A refusal for
 * cost, the subscription cap or the subscription's own scope is raised before anything runs, so a
 * client must hear one `error` with the codes, not a result followed by `complete`.
 */
describe.each(engines())('graphql-ws refusals on %s', (engine) => {
  let s: ApiServer;
  let all: TestAgent;
  let client: Client;

  beforeAll(async () => {
    s = await startApiServer(engine, { config: { limits: { subscriptionsPerToken: 1, cost: 20 } } });
    all = await agentWith(s.db.store, 'wsr', SCOPES, 'all');
    client = createClient({
      url: s.ws,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${all.token}` },
      retryAttempts: 0,
      lazy: true,
    });
  });
  afterAll(async () => {
    await client?.dispose();
    await s?.close();
  });

  const codesOf = (e: unknown) =>
    Array.isArray(e)
      ? e.map(
          (x: { extensions?: { code?: string; limit?: string } }) =>
            `${x.extensions?.code}/${x.extensions?.limit ?? ''}`,
        )
      : [String(e)];

  it('a too expensive query or subscription is one error message with LIMIT_EXCEEDED/cost', async () => {
    const pricey = '{ beliefs(first: 100) { edges { node { id claimKey } } } }';
    const q = await hear(client, pricey);
    expect({ kinds: q.kinds, codes: codesOf(q.error) }).toEqual({ kinds: ['error'], codes: ['LIMIT_EXCEEDED/cost'] });
    const sub = await hear(
      client,
      'subscription { retractionEvents { cursor at retraction { id reason root { id claimKey statement } } } }',
    );
    expect({ kinds: sub.kinds, codes: codesOf(sub.error) }).toEqual({
      kinds: ['error'],
      codes: ['LIMIT_EXCEEDED/cost'],
    });
  });

  it('a subscription over the per-token cap is one error message with LIMIT_EXCEEDED/subscriptionsPerToken; the open one stays open', async () => {
    const first = client.subscribe(
      { query: 'subscription { retractionEvents { cursor } }' },
      { next: () => {}, error: () => {}, complete: () => {} },
    );
    try {
      // The first is counted from its subscribe; give the server a moment to have it.
      await new Promise((r) => setTimeout(r, 500));
      const over = await hear(client, 'subscription { retractionEvents { cursor } }');
      expect({ kinds: over.kinds, codes: codesOf(over.error) }).toEqual({
        kinds: ['error'],
        codes: ['LIMIT_EXCEEDED/subscriptionsPerToken'],
      });
    } finally {
      first();
    }
  });

  it('a subscription the token may not open, or with a bad cursor, is one error message; a query that ran with a field error is next then complete', async () => {
    const reader = await agentWith(s.db.store, 'wsr', ['beliefs:read'], 'reader');
    const limited = createClient({
      url: s.ws,
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${reader.token}` },
      retryAttempts: 0,
      lazy: true,
    });
    try {
      const forbidden = await hear(limited, 'subscription { retractionEvents { cursor } }');
      expect({ kinds: forbidden.kinds, codes: codesOf(forbidden.error) }).toEqual({
        kinds: ['error'],
        codes: ['FORBIDDEN/'],
      });
      const badCursor = await hear(client, 'subscription { retractionEvents(after: "nope") { cursor } }');
      expect({ kinds: badCursor.kinds, codes: codesOf(badCursor.error) }).toEqual({
        kinds: ['error'],
        codes: ['BAD_USER_INPUT/'],
      });
      // Executed: data (null where refused) and errors are the operation's result.
      const ran = await hear(limited, '{ viewer { name } retractions(first: 1) { totalCount } }');
      expect(ran.kinds).toEqual(['next', 'complete']);
      expect(ran.next[0]).toMatchObject({ data: null, errors: [{ extensions: { code: 'FORBIDDEN' } }] });
    } finally {
      await limited.dispose();
    }
  });
});
