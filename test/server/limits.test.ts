import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/server/yoga';
import type { Embedder } from '../../src/embedding/embedder';
import { embedder as local, engines, expectInvariants } from '../support/engines';
import { codes, gql, gqlRaw, ok, subscribeWs, wsClient, type GqlResponse, type WireError } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer, tableDigests, type TestAgent } from '../support/api-server';
import { belief } from '../support/story';
import { gid } from '../../src/kernel/ids';
import { SCOPES } from '../../src/agent/scopes';

const SECRET = 'embedder-secret-detail-7f3a';

/** The local embedder, except that a text containing EXPLODE makes it throw a plain Error (an unexpected failure). */
const exploding: Embedder = {
  id: local.id,
  dimensions: local.dimensions,
  async embed(texts) {
    if (texts.some((t) => t.includes('EXPLODE'))) throw new Error(`boom: ${SECRET}`);
    return local.embed(texts);
  },
};

/** No digit in any message: a limit's value is never echoed to the client. */
function noNumbers(errors: readonly WireError[] | undefined) {
  expect(errors?.length).toBeGreaterThan(0);
  for (const e of errors!) expect(e.message).not.toMatch(/\d/);
}

/**
 * Request limits over a listening server: depth, aliases, body size, tokens, batch size and page
 * size are each refused with a message that says what was exceeded without stating the limit, the
 * server keeps serving, and an unexpected error is masked with a request id that is in the log.
 */
describe.each(engines())('request limits on %s', (engine) => {
  let s: ApiServer;
  let token: string;
  let agent: TestAgent;
  const stillServing = async () => {
    const r = ok(await gql(s.http, '{ viewer { name } }', {}, token));
    expect(r.viewer.name).toMatch(/^limits-/);
  };

  beforeAll(async () => {
    s = await startApiServer(engine, { embedder: exploding });
    agent = await agentWith(s.db.store, 'acme', SCOPES, 'limits');
    token = agent.token;
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it('a query 30 levels deep is refused (by the cost rule, which grows with depth), one just past the depth limit by the depth rule', async () => {
    const nested = (levels: number) =>
      `{ beliefs { edges { node { ${'justifications { premises { '.repeat(levels)} id ${'} } '.repeat(levels)} } } } }`;
    const deep = await gql(s.http, nested(14), {}, token); // 3 + 2 × 14 = 31 levels
    expect(deep.data ?? null).toBeNull();
    expect(deep.errors!.map((e) => e.message)).toEqual([expect.stringMatching(/nested too deeply|too expensive/)]);
    noNumbers(deep.errors);
    const past = await gql(s.http, nested(Math.ceil((LIMITS.depth - 2) / 2)), {}, token);
    expect(past.errors!.map((e) => e.message)).toEqual([expect.stringMatching(/nested too deeply/)]);
    noNumbers(past.errors);
    expect(JSON.stringify([deep.body, past.body])).not.toContain(String(LIMITS.depth));
    await stillServing();
  });

  it('100 aliases are refused, over HTTP and over graphql-ws alike, where the refusal leaves the socket and its other subscriptions alone', async () => {
    const fields = Array.from({ length: 100 }, (_, i) => `a${i}: viewer { id }`).join(' ');
    const r = await gql(s.http, `{ ${fields} }`, {}, token);
    expect(r.data ?? null).toBeNull();
    expect(r.errors!.map((e) => e.message)).toEqual([expect.stringMatching(/too many aliases/)]);
    noNumbers(r.errors);
    const client = wsClient(s.ws, token);
    try {
      const live = subscribeWs(client, 'subscription { retractionEvents { __typename retraction { id } } }');
      await new Promise((res) => setTimeout(res, 500));
      const refused = subscribeWs(
        client,
        `subscription { ${Array.from({ length: 100 }, (_, i) => `a${i}: retractionEvents { cursor }`).join(' ')} }`,
      );
      await refused.until((c) => c.errors.length > 0 || c.completed, 10_000, 'the websocket refusal');
      expect(refused.errors.map((e) => e.message)).toEqual([expect.stringMatching(/too many aliases/)]);
      noNumbers(refused.errors);
      const tooLong = subscribeWs(
        client,
        `subscription { retractionEvents { ${'cursor '.repeat(LIMITS.tokens + 10)} } }`,
      );
      await tooLong.until((c) => c.errors.length > 0 || c.completed, 10_000, 'the websocket refusal');
      expect(tooLong.errors.map((e) => e.message)).toEqual([expect.stringMatching(/too many tokens/)]);
      const broken = subscribeWs(client, 'subscription { retractionEvents { ');
      await broken.until((c) => c.errors.length > 0 || c.completed, 10_000, 'the websocket refusal');
      expect(broken.errors.map((e) => e.message)).toEqual([expect.stringMatching(/^Syntax Error/)]);
      // The first subscription on the same socket still delivers.
      const actor = { fleet: 'acme', agentId: agent.id };
      const b = await belief(s.core, actor, 'limits/ws-alive');
      const rid = ok(
        await gql(
          s.http,
          'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "still alive?" }) { id } }',
          { b: gid('Belief', b.id) },
          token,
        ),
      ).retractBelief.id;
      await live.until(
        (c) =>
          c.events.some(
            (e: any) =>
              e.retractionEvents.__typename === 'RetractionCommitted' && e.retractionEvents.retraction.id === rid,
          ),
        10_000,
        'the live subscription',
      );
      expect(live.failures).toEqual([]);
    } finally {
      await client.dispose();
    }
    await stillServing();
  });

  it('a body over 1 MiB is refused with 413, and nothing is written', async () => {
    const before = await tableDigests(s.db.store);
    const body = JSON.stringify({
      query: 'mutation($s: String!) { assertBelief(input: { claimKey: "big/one", statement: $s }) { __typename } }',
      variables: { s: 'z'.repeat(1_100_000) },
    });
    expect(Buffer.byteLength(body)).toBeGreaterThan(1024 * 1024);
    const r = await gqlRaw(s.http, body, token);
    expect(r.status).toBe(413);
    expect(r.body.errors[0].message).toMatch(/too large/);
    expect(r.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    noNumbers(r.body.errors);
    expect(await tableDigests(s.db.store)).toEqual(before);
    await stillServing();
  });

  it('a query with too many tokens is refused', async () => {
    const r = await gql(s.http, `{ viewer { ${'name '.repeat(LIMITS.tokens + 500)} } }`, {}, token);
    expect(r.data ?? null).toBeNull();
    expect(r.errors!.map((e) => e.message)).toEqual([expect.stringMatching(/too many tokens/)]);
    noNumbers(r.errors);
    await stillServing();
  });

  it('a batch over the limit is refused as a whole; one within it is answered', async () => {
    const op = { query: '{ viewer { name } }' };
    const over = await gqlRaw(s.http, JSON.stringify(Array.from({ length: 6 }, () => op)), token);
    expect(over.status).toBe(413);
    const errors = (
      Array.isArray(over.body) ? over.body.flatMap((b: GqlResponse['body']) => b.errors ?? []) : over.body.errors
    ) as WireError[];
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/too many operations in one batched request/)]);
    noNumbers(errors);
    const within = await gqlRaw(s.http, JSON.stringify(Array.from({ length: 2 }, () => op)), token);
    expect(within.status).toBe(200);
    expect(
      within.body.map((b: { data: { viewer: { name: string } } }) => b.data.viewer.name.startsWith('limits-')),
    ).toEqual([true, true]);
    await stillServing();
  });

  it('first above 500 is BAD_USER_INPUT naming first, on every connection', async () => {
    for (const query of [
      '{ beliefs(first: 501) { totalCount } }',
      '{ retractions(first: 501) { totalCount } }',
      '{ effects(first: 501) { totalCount } }',
      '{ reversals(first: 501) { totalCount } }',
    ]) {
      const r = await gql(s.http, query, {}, token);
      expect(codes(r.errors)).toEqual(['BAD_USER_INPUT']);
      expect(r.errors![0]!.extensions!.field).toBe('first');
      expect(r.errors![0]!.message).toMatch(/^first: /);
    }
    // 500 itself is allowed.
    expect(
      ok(await gql(s.http, '{ beliefs(first: 500) { totalCount } }', {}, token)).beliefs.totalCount,
    ).toBeGreaterThanOrEqual(0);
    await stillServing();
  });

  it('an unexpected error is masked with a request id; the server logs the cause under that id and keeps serving', async () => {
    const r = await gql(s.http, '{ search(input: { text: "EXPLODE now" }) { snapshot } }', {}, token);
    expect(codes(r.errors)).toEqual(['INTERNAL_SERVER_ERROR']);
    const e = r.errors![0]!;
    const requestId = e.extensions!.requestId as string;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(e.message).toBe(`Unexpected error. (request id ${requestId})`);
    expect(JSON.stringify(r.body)).not.toContain(SECRET);
    expect(JSON.stringify(r.body)).not.toMatch(/boom|stack|embed/i);
    const logged = s.logs.lines.filter((l) => l.requestId === requestId);
    expect(logged.length).toBe(1);
    expect(logged[0]!.level).toBe(50);
    expect(JSON.stringify(logged[0])).toContain(SECRET);
    await stillServing();
  });
});
