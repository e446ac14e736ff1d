import { Client as UrqlClient, subscriptionExchange } from '@urql/core';
import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SCOPES } from '../../src/agent/scopes';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';
import { engines, expectInvariants } from '../support/engines';

/** A `ws` WebSocket class that sends `headers` on the upgrade request, as Node clients can (browsers cannot). */
const withHeaders = (headers: Record<string, string>) =>
  class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers });
    }
  };

/** How a graphql-ws connection ended up: acknowledged (and `viewer.name` read on it), or closed with a code before any ack. */
async function connect(
  url: string,
  opts: { connectionParams?: Record<string, unknown>; headers?: Record<string, string> },
): Promise<{ acked: boolean; closeCode?: number; viewer?: string }> {
  let acked = false;
  let closeCode: number | undefined;
  const client = createClient({
    url,
    webSocketImpl: opts.headers ? withHeaders(opts.headers) : WebSocket,
    connectionParams: opts.connectionParams,
    retryAttempts: 0,
    lazy: true,
    on: { connected: () => void (acked = true), closed: (e) => void (closeCode = (e as { code?: number }).code) },
  });
  try {
    const viewer = await new Promise<string | undefined>((resolve) => {
      client.subscribe<{ viewer: { name: string } }>(
        { query: '{ viewer { name } }' },
        {
          next: (r) => resolve(r.data?.viewer.name),
          error: () => resolve(undefined),
          complete: () => resolve(undefined),
        },
      );
    });
    return { acked, closeCode, viewer };
  } finally {
    await client.dispose();
  }
}

/** A raw `ws` socket speaking graphql-transport-ws by hand: every message it heard and how it closed. */
function raw(url: string, init: unknown | null, headers: Record<string, string> = {}) {
  const socket = new WebSocket(url, 'graphql-transport-ws', { headers });
  const heard: Array<{ type: string }> = [];
  const opened = new Promise<number>((resolve) => {
    socket.once('open', () => resolve(101));
    socket.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    socket.once('error', () => {});
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.once('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  socket.on('message', (d) => heard.push(JSON.parse(String(d)) as { type: string }));
  if (init !== null) socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: init })));
  return { socket, heard, opened, closed };
}

/**
 * WebSocket auth as clients send it (graphql-ws, urql, a raw socket): the bearer token is read from
 * the upgrade request's Authorization header or from connection_init's `authorization`,
 * `Authorization` or `headers.Authorization`; a missing or bad token is closed with 4403 before any
 * connection_ack. Sockets that have not authenticated are capped per address, and one that never
 * sends connection_init is closed when its time is up.
 */
describe.each(engines())('WebSocket authentication on %s', (engine) => {
  let s: ApiServer;
  let agent: TestAgent;
  const CAP = 3;

  beforeAll(async () => {
    s = await startApiServer(engine, {
      config: { limits: { wsUnauthenticatedPerAddress: CAP, wsInitTimeoutMs: 1_000 } },
    });
    agent = await agentWith(s.db.store, 'wsauth', SCOPES, 'wsauth');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it('graphql-ws: the token is read from each place clients put it', async () => {
    const bearer = `Bearer ${agent.token}`;
    for (const how of [
      { headers: { Authorization: bearer } },
      { connectionParams: { authorization: bearer } },
      { connectionParams: { Authorization: bearer } },
      { connectionParams: { headers: { Authorization: bearer } } },
      { connectionParams: { headers: { authorization: bearer } } },
    ]) {
      expect(await connect(s.ws, how), JSON.stringify(how)).toMatchObject({ acked: true, viewer: agent.name });
    }
  });

  it('graphql-ws: no token, a forged token, a token without "Bearer" and a bad upgrade header are closed 4403 without connection_ack', async () => {
    for (const how of [
      {},
      { connectionParams: {} },
      { connectionParams: { authorization: 'Bearer rt_forged_token_0123456789' } },
      { connectionParams: { headers: { Authorization: agent.token } } },
      {
        headers: { Authorization: 'Bearer rt_forged_token_0123456789' },
        connectionParams: { authorization: `Bearer ${agent.token}` },
      },
    ]) {
      expect(await connect(s.ws, how), JSON.stringify(how)).toEqual({
        acked: false,
        closeCode: 4403,
        viewer: undefined,
      });
    }
  });

  it("urql with graphql-ws's subscription exchange: a query and a subscription run with a token; without one the socket is closed 4403", async () => {
    const run = async (token: string | null) => {
      const closes: number[] = [];
      const ws = createClient({
        url: s.ws,
        webSocketImpl: WebSocket,
        retryAttempts: 0,
        lazy: true,
        connectionParams: token ? { authorization: `Bearer ${token}` } : {},
        // Kept open between operations: a lazy client closing its socket as the next subscribe arrives can lose it.
        lazyCloseTimeout: 5_000,
        on: { closed: (e) => void closes.push((e as { code: number }).code) },
      });
      const urql = new UrqlClient({
        url: s.http,
        exchanges: [
          subscriptionExchange({
            enableAllOperations: true,
            forwardSubscription: (request) => ({
              subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
            }),
          }),
        ],
      });
      try {
        const q = await urql.query('{ viewer { name } }', {}).toPromise();
        const events: string[] = [];
        const sub = urql.subscription('subscription { retractionEvents { __typename } }', {}).subscribe((r) => {
          if (r.data) events.push(r.data.retractionEvents.__typename as string);
        });
        if (token) {
          // A subscription starts from "now" once the server has it: retract a fresh belief until one is heard.
          for (let attempt = 0; events.length === 0 && attempt < 5; attempt++) {
            const asserted = await urql
              .mutation(
                `mutation { assertBelief(input: { claimKey: "wsauth:urql/${attempt}", statement: "urql was here" }) { ... on BeliefAsserted { belief { id } } } }`,
                {},
              )
              .toPromise();
            expect(asserted.error).toBeUndefined();
            const id = (asserted.data as { assertBelief: { belief: { id: string } } }).assertBelief.belief.id;
            const retracted = await urql
              .mutation(`mutation { retractBelief(input: { beliefId: "${id}", reason: "urql test" }) { id } }`, {})
              .toPromise();
            expect(retracted.error).toBeUndefined();
            await expect
              .poll(() => events.length, { timeout: 3_000 })
              .toBeGreaterThan(0)
              .catch(() => {});
          }
        }
        sub.unsubscribe();
        return {
          viewer: (q.data as { viewer?: { name: string } } | undefined)?.viewer?.name,
          failed: !!q.error,
          closes,
          events: events.length > 0,
        };
      } finally {
        await ws.dispose();
      }
    };
    expect(await run(agent.token)).toMatchObject({ viewer: agent.name, failed: false, events: true });
    expect(await run(null)).toEqual({ viewer: undefined, failed: true, closes: [4403], events: false });
  });

  it('a raw socket: connection_init without a token hears nothing and is closed 4403; with the upgrade header it is acknowledged', async () => {
    const none = raw(s.ws, {});
    expect(await none.closed).toEqual({ code: 4403, reason: 'Forbidden' });
    expect(none.heard).toEqual([]);
    const withHeader = raw(s.ws, null, { authorization: `Bearer ${agent.token}` });
    await withHeader.opened;
    withHeader.socket.send(JSON.stringify({ type: 'connection_init' }));
    await expect.poll(() => withHeader.heard.map((m) => m.type)).toEqual(['connection_ack']);
    withHeader.socket.close(1000);
    expect((await withHeader.closed).code).toBe(1000);
  });

  it(`at most ${CAP} unauthenticated sockets per address: the next upgrade is refused 429 until one authenticates or closes; a silent one is closed 4408`, async () => {
    const started = Date.now();
    const silent = Array.from({ length: CAP }, () => raw(s.ws, null));
    expect(await Promise.all(silent.map((x) => x.opened))).toEqual(Array(CAP).fill(101));
    const over = raw(s.ws, null);
    expect(await over.opened).toBe(429);
    // The silent ones are closed once wsInitTimeoutMs (1 s here) passes without connection_init: room again.
    for (const x of silent) expect((await x.closed).code).toBe(4408);
    expect(Date.now() - started).toBeLessThan(10_000);

    // One that authenticates stops counting: CAP more unauthenticated ones fit beside it.
    const authed = raw(s.ws, { authorization: `Bearer ${agent.token}` });
    await expect.poll(() => authed.heard.map((m) => m.type)).toEqual(['connection_ack']);
    const again = Array.from({ length: CAP }, () => raw(s.ws, null));
    expect(await Promise.all(again.map((x) => x.opened))).toEqual(Array(CAP).fill(101));
    expect(await raw(s.ws, null).opened).toBe(429);
    for (const x of [...again, authed]) x.socket.close(1000);
    await Promise.all(again.map((x) => x.closed));
  });
});

/** RETRACT_WS_ANONYMOUS: a server that admits anonymous sockets acknowledges one without a token; a bad token is still refused. */
describe('WebSocket authentication with anonymous connections allowed', () => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer('pglite', { config: { wsAnonymous: true } });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('acks a socket without a token (its operations are then UNAUTHENTICATED) and closes one with a bad token 4403', async () => {
    let acked = false;
    const client: Client = createClient({
      url: s.ws,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: true,
      on: { connected: () => void (acked = true) },
    });
    try {
      const answer = await new Promise<unknown>((resolve) => {
        client.subscribe({ query: '{ viewer { name } }' }, { next: resolve, error: resolve, complete: () => {} });
      });
      expect(acked).toBe(true);
      expect(answer).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHENTICATED' } }] });
    } finally {
      await client.dispose();
    }
    expect(await connect(s.ws, { connectionParams: { authorization: 'Bearer rt_forged_token_0123456789' } })).toEqual({
      acked: false,
      closeCode: 4403,
      viewer: undefined,
    });
  });
});
