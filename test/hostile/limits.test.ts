import fs from 'node:fs';
import { buildSchema, getNamedType, isLeafType, type GraphQLObjectType } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/agent/scopes';
import { gid } from '../../src/kernel/ids';
import { configFromEnv } from '../../src/server/config';
import { LIMITS } from '../../src/server/yoga';
import { codes, gql, gqlRaw, ok, subscribeSse, subscribeWs, wsClient, type WireError } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';
import { engines, expectInvariants } from '../support/engines';
import { belief } from '../support/story';

const schema = buildSchema(fs.readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8'));

/** Every argument-free scalar field of a type: a connection's node read in full. */
function allScalars(type: string): string {
  const t = schema.getType(type) as GraphQLObjectType;
  return Object.values(t.getFields())
    .filter((f) => isLeafType(getNamedType(f.type)) && f.args.every((a) => !String(a.type).endsWith('!')))
    .map((f) => f.name)
    .join(' ');
}
const ROOTS = [
  ['beliefs', 'Belief'],
  ['retractions', 'Retraction'],
  ['effects', 'Effect'],
  ['reversals', 'Reversal'],
] as const;
const page = (field: string, type: string, first: string) =>
  `${field}(first: ${first}) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { ${allScalars(type)} } } }`;

/** A refusal for a limit: LIMIT_EXCEEDED naming the limit, in words, without "Syntax Error:" and without its value. */
function expectLimit(errors: readonly WireError[] | undefined, limit: string, words: RegExp) {
  expect(errors?.length, JSON.stringify(errors)).toBe(1);
  const e = errors![0]!;
  expect(e.extensions?.code).toBe('LIMIT_EXCEEDED');
  expect(e.extensions?.limit).toBe(limit);
  expect(e.message).toMatch(words);
  expect(e.message).not.toMatch(/Syntax Error|\d/);
}

/**
 * The edge of the API as a hostile or merely careless client meets it, over real sockets: every
 * refusal carries extensions.code; the documented `first: 500` works on the documented connections
 * while nested pages stay refused; subscriptions per token and MCP batches are capped; media types
 * are case-insensitive; CORS follows RETRACT_CORS_ORIGINS.
 */
describe.each(engines())('limits at the edge on %s', (engine) => {
  let s: ApiServer;
  let all: TestAgent;
  let other: TestAgent;
  const CAP = 3;

  beforeAll(async () => {
    s = await startApiServer(engine, {
      config: { corsOrigins: ['https://app.example'], limits: { subscriptionsPerToken: CAP } },
    });
    all = await agentWith(s.db.store, 'edge', SCOPES, 'all');
    other = await agentWith(s.db.store, 'edge', SCOPES, 'other');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it("graphql-armor's refusals carry LIMIT_EXCEEDED and the limit's name, over HTTP and graphql-ws; syntax and validation errors carry codes too", async () => {
    const nested = (n: number) =>
      `{ beliefs { edges { node { ${'justifications { premises { '.repeat(n)} id ${'} } '.repeat(n)} } } } }`;
    expectLimit(
      (await gql(s.http, nested(Math.ceil((LIMITS.depth - 2) / 2)), {}, all.token)).errors,
      'depth',
      /nested too deeply/,
    );
    expectLimit(
      (
        await gql(
          s.http,
          `{ ${Array.from({ length: LIMITS.aliases + 1 }, (_, i) => `a${i}: viewer { id }`).join(' ')} }`,
          {},
          all.token,
        )
      ).errors,
      'aliases',
      /too many aliases/,
    );
    expectLimit(
      (await gql(s.http, `{ viewer { ${'name '.repeat(LIMITS.tokens + 10)} } }`, {}, all.token)).errors,
      'tokens',
      /too many tokens/,
    );
    expectLimit(
      (await gql(s.http, `{ viewer { id ${'@include(if: true) '.repeat(LIMITS.directives + 1)} } }`, {}, all.token))
        .errors,
      'directives',
      /too many directives/,
    );
    const batch = await gqlRaw(
      s.http,
      JSON.stringify(Array.from({ length: LIMITS.batch + 1 }, () => ({ query: '{ viewer { id } }' }))),
      all.token,
    );
    expect(batch.status).toBe(413);
    expectLimit(batch.body.errors, 'batch', /too many operations/);

    const syntax = await gql(s.http, '{ viewer { ', {}, all.token);
    expect(codes(syntax.errors)).toEqual(['GRAPHQL_PARSE_FAILED']);
    const unknown = await gql(s.http, '{ viewer { password } }', {}, all.token);
    expect(codes(unknown.errors)).toEqual(['GRAPHQL_VALIDATION_FAILED']);

    const client = wsClient(s.ws, all.token);
    try {
      const aliases = subscribeWs(
        client,
        `subscription { ${Array.from({ length: LIMITS.aliases + 1 }, (_, i) => `a${i}: retractionEvents { cursor }`).join(' ')} }`,
      );
      await aliases.until((c) => c.errors.length > 0 || c.completed, 20_000, 'the alias refusal');
      expectLimit(aliases.errors, 'aliases', /too many aliases/);
      const tokens = subscribeWs(
        client,
        `subscription { retractionEvents { ${'cursor '.repeat(LIMITS.tokens + 10)} } }`,
      );
      await tokens.until((c) => c.errors.length > 0, 20_000, 'the token refusal');
      expectLimit(tokens.errors, 'tokens', /too many tokens/);
      const broken = subscribeWs(client, 'subscription { retractionEvents { ');
      await broken.until((c) => c.errors.length > 0, 20_000, 'the syntax refusal');
      expect(codes(broken.errors)).toEqual(['GRAPHQL_PARSE_FAILED']);
    } finally {
      await client.dispose();
    }
  });

  it('every variable refusal carries BAD_USER_INPUT: a required one not given or null, a wrong type, an unknown input field', async () => {
    for (const [query, variables] of [
      ['query($id: ID!) { node(id: $id) { id } }', {}],
      ['query($id: ID!) { node(id: $id) { id } }', { id: null }],
      ['query($n: Int) { beliefs(first: $n) { totalCount } }', { n: 'x' }],
      [
        'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }',
        { i: { beliefId: 'x', reason: 'r', extra: 1 } },
      ],
    ] as const) {
      const r = await gql(s.http, query, variables, all.token);
      expect({ query, variables, codes: codes(r.errors) }).toEqual({ query, variables, codes: ['BAD_USER_INPUT'] });
    }
  });

  it('first above 500, as a literal or a variable, at the root or nested, is told the 1–500 rule, not "too expensive"', async () => {
    for (const [query, variables] of [
      ['{ beliefs(first: 100000) { totalCount } }', {}],
      ['{ beliefs(first: 5) { edges { node { dependents(first: 100000) { totalCount } } } } }', {}],
      ['query($n: Int) { effects(first: $n) { edges { node { id kind } } } }', { n: 100_000 }],
      ['{ reversals(first: 0) { totalCount } }', {}],
    ] as const) {
      const r = await gql(s.http, query, variables, all.token);
      expect(codes(r.errors), JSON.stringify(r.errors)).toEqual(['BAD_USER_INPUT']);
      expect(r.errors![0]!.extensions!.field).toBe('first');
      expect(r.errors![0]!.message).toBe('first: must be an integer from 1 to 500');
    }
  });

  it('the four root connections at first: 500 with every scalar field are one query that works, by literal and by variable; a nested 500 × 500 page is refused as too expensive', async () => {
    const actor = { fleet: 'edge', agentId: all.id };
    await belief(s.core, actor, 'edge/one');
    const literal = ok(await gql(s.http, `{ ${ROOTS.map(([f, t]) => page(f, t, '500')).join(' ')} }`, {}, all.token));
    expect(literal.beliefs.totalCount).toBeGreaterThanOrEqual(1);
    const byVariable = ok(
      await gql(
        s.http,
        `query($n: Int) { ${ROOTS.map(([f, t]) => page(f, t, '$n')).join(' ')} }`,
        { n: 500 },
        all.token,
      ),
    );
    expect(Object.keys(byVariable)).toEqual(ROOTS.map(([f]) => f));

    const nested =
      'query($n: Int, $m: Int) { beliefs(first: $n) { edges { node { id dependents(first: $m) { edges { node { id claimKey } } } } } } }';
    expectLimit((await gql(s.http, nested, { n: 500, m: 500 }, all.token)).errors, 'cost', /too expensive/);
    const literal500x500 =
      '{ beliefs(first: 500) { edges { node { id dependents(first: 500) { edges { node { id claimKey } } } } } } }';
    expectLimit((await gql(s.http, literal500x500, {}, all.token)).errors, 'cost', /too expensive/);
    ok(await gql(s.http, nested, { n: 500, m: 5 }, all.token));
  });

  it(`subscriptions per token are capped (${CAP} here) over graphql-ws and SSE together; a closed one frees its place; another token is unaffected`, async () => {
    const q = 'subscription { retractionEvents { __typename } }';
    const a = wsClient(s.ws, all.token);
    const b = wsClient(s.ws, all.token);
    const open = [subscribeWs(a, q), subscribeWs(a, q), subscribeSse(s.http, q, {}, all.token)];
    const others: Array<{ close(): Promise<void> }> = [];
    try {
      // A subscription is live once it has delivered an event; retract until each of the three has had one.
      const actor = { fleet: 'edge', agentId: all.id };
      let n = 0;
      const retractOne = async () => {
        const bel = await belief(s.core, actor, `edge/subs-${++n}`);
        ok(
          await gql(
            s.http,
            'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "live?" }) { id } }',
            { b: gid('Belief', bel.id) },
            all.token,
          ),
        );
      };
      const deadline = Date.now() + 60_000;
      while (open.some((c) => c.events.length === 0)) {
        expect(Date.now(), 'three live subscriptions').toBeLessThan(deadline);
        await retractOne();
        await Promise.all(open.map((c) => c.until((x) => x.events.length > 0, 1_000).catch(() => {})));
      }

      const overWs = subscribeWs(b, q);
      await overWs.until((c) => c.errors.length > 0 || c.completed, 30_000, 'the refusal over graphql-ws');
      expectLimit(overWs.errors, 'subscriptionsPerToken', /too many open subscriptions/);
      const overSse = subscribeSse(s.http, q, {}, all.token);
      others.push(overSse);
      await overSse.until((c) => c.errors.length > 0 || c.completed, 30_000, 'the refusal over SSE');
      expectLimit(overSse.errors, 'subscriptionsPerToken', /too many open subscriptions/);

      const otherToken = subscribeWs(s.ws, q, {}, other.token);
      others.push(otherToken);
      await open[0]!.close();
      const again = subscribeWs(b, q);
      others.push(again);
      while ((again.events.length === 0 || otherToken.events.length === 0) && again.errors.length === 0) {
        expect(Date.now(), 'events on the freed place and on the other token').toBeLessThan(deadline + 60_000);
        await retractOne();
        await Promise.all([again, otherToken].map((c) => c.until((x) => x.events.length > 0, 1_000).catch(() => {})));
      }
      expect(again.errors).toEqual([]);

      // A dropped socket and an aborted SSE stream give their places back too: two new ones both deliver.
      // The server learns of the drops asynchronously, so a new one refused in that moment is tried again.
      await a.dispose();
      await open[2]!.close();
      const c = wsClient(s.ws, all.token);
      others.push({ close: async () => void (await c.dispose()) });
      const fresh = [subscribeWs(c, q), subscribeWs(c, q)];
      let retries = 0;
      while (fresh.some((f) => f.events.length === 0)) {
        expect(Date.now(), 'events on the places given back').toBeLessThan(deadline + 120_000);
        for (const [i, f] of fresh.entries()) {
          if (f.errors.length === 0) continue;
          expect(retries++, JSON.stringify(f.errors)).toBeLessThan(10);
          fresh[i] = subscribeWs(c, q);
        }
        await retractOne();
        await Promise.all(
          fresh.map((f) => f.until((x) => x.events.length > 0 || x.errors.length > 0, 1_000).catch(() => {})),
        );
      }
      others.push(...fresh);
    } finally {
      for (const c of [...open, ...others]) await c.close().catch(() => {});
      await a.dispose();
      await b.dispose();
    }
  });

  it("MCP batches are capped like GraphQL's: a batch over the cap is 413 with a JSON-RPC error naming RETRACT_MCP_MAX_BATCH; one at the cap is answered", async () => {
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/list', params: {} });
    const post = (body: unknown, contentType = 'application/json') =>
      fetch(`${s.base}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': contentType,
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${all.token}`,
        },
        body: JSON.stringify(body),
      });
    const over = await post(Array.from({ length: 100 }, (_, i) => call(i + 1)));
    expect(over.status).toBe(413);
    const refusal = await over.json();
    expect(refusal.error.code).toBe(-32600);
    expect(refusal.error.message).toMatch(/at most 5 JSON-RPC messages \(RETRACT_MCP_MAX_BATCH\)/);
    expect((await post(Array.from({ length: 6 }, (_, i) => call(i + 1)))).status).toBe(413);
    const within = await post(Array.from({ length: 5 }, (_, i) => call(i + 1)));
    expect(within.status).toBe(200);
    expect((await within.json()).map((r: { id: number }) => r.id).sort()).toEqual([1, 2, 3, 4, 5]);
    // Media types are case-insensitive here too.
    expect((await post(call(9), 'APPLICATION/JSON')).status).toBe(200);
  });

  it('media types are case-insensitive, and every HTTP refusal of /graphql has a JSON body with a code', async () => {
    for (const type of ['APPLICATION/JSON', 'Application/Json; charset=UTF-8']) {
      const r = await gql(s.http, '{ viewer { name } }', {}, all.token, { 'content-type': type });
      expect(r.status, type).toBe(200);
      expect(r.data.viewer.name).toMatch(/^all-/);
    }
    expect(
      (await gql(s.http, '{ viewer { name } }', {}, all.token, { accept: 'APPLICATION/GRAPHQL-RESPONSE+JSON' })).status,
    ).toBe(200);
    const refusals = [
      await fetch(s.http, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }),
      await fetch(s.http, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ viewer { id } }"}',
      }),
      await fetch(s.http, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'image/png' },
        body: '{"query":"{ viewer { id } }"}',
      }),
    ];
    for (const r of refusals) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await r.json();
      expect(body.errors[0].extensions.code, JSON.stringify(body)).toBeTruthy();
      expect(body.errors[0].message.length).toBeGreaterThan(0);
    }
  });

  it('CORS is a stated policy: none by default; the configured origins get preflight grants and their header, any other origin a 403 preflight and none', async () => {
    expect(configFromEnv({}).corsOrigins).toEqual([]);
    expect(configFromEnv({ RETRACT_CORS_ORIGINS: 'https://a.example, https://b.example/' }).corsOrigins).toEqual([
      'https://a.example',
      'https://b.example',
    ]);
    const preflight = (origin: string, path = '/graphql') =>
      fetch(`${s.base}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type',
        },
      });
    for (const path of ['/graphql', '/mcp']) {
      const granted = await preflight('https://app.example', path);
      expect(granted.status).toBe(204);
      expect(granted.headers.get('access-control-allow-origin')).toBe('https://app.example');
      expect(granted.headers.get('access-control-allow-headers')).toMatch(/authorization/);
      expect(granted.headers.get('access-control-allow-methods')).toMatch(/POST/);
      const refused = await preflight('https://evil.example', path);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
      expect((await refused.json()).error).toMatch(/RETRACT_CORS_ORIGINS/);
    }
    const fromApp = await gql(s.http, '{ viewer { name } }', {}, all.token, { origin: 'https://app.example' });
    expect(fromApp.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const fromEvil = await gql(s.http, '{ viewer { name } }', {}, all.token, { origin: 'https://evil.example' });
    expect(fromEvil.headers.get('access-control-allow-origin')).toBeNull();
    const getFromEvil = await fetch(`${s.http}?query=${encodeURIComponent('{ effectKinds { kind } }')}`, {
      headers: { origin: 'https://evil.example', accept: 'application/json' },
    });
    expect(getFromEvil.headers.get('access-control-allow-origin')).toBeNull();
  });
});
