import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { HeuristicAdjudicator } from '../../src/adjudication/heuristic';
import { Waker } from '../../src/event/tailer';
import { answerPost } from '../../src/server/graphql-post';
import { buildYoga } from '../../src/server/yoga';
import { agentWith, type TestAgent } from '../support/api-server';
import { coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';

type Yoga = ReturnType<typeof buildYoga>;

/** What Yoga's own pipeline answers for the same POST: the reference the fast path must match byte for byte. */
async function viaYoga(yoga: Yoga, headers: Record<string, string>, body: string) {
  const r = await yoga.fetch(
    new Request('http://localhost/graphql', { method: 'POST', headers, body: new TextEncoder().encode(body) }),
    {},
  );
  const h: Record<string, string> = {};
  r.headers.forEach((v, k) => (h[k] = v));
  return { status: r.status, headers: h, body: await r.text() };
}

/**
 * src/server/graphql-post.ts answers a plain POST without Yoga's request pipeline: its answers (status,
 * headers, body) must be Yoga's own for every outcome a single query or mutation can have, and it must run
 * nothing and hand back null for every request it does not take.
 */
describe.each(engines())('the plain POST path on %s', (engine) => {
  let db: TestDb;
  let yoga: Yoga;
  let waker: Waker;
  let reader: TestAgent;
  let writer: TestAgent;
  storeSuite(engine, {}, async (s) => {
    db = s.t;
    waker = new Waker(db.store);
    await waker.start();
    yoga = buildYoga({
      core: coreOf(db.store),
      adjudicator: new HeuristicAdjudicator(),
      waker,
      log: pino({ level: 'silent' }),
      production: false,
    });
    reader = await agentWith(db.store, 'acme', ['beliefs:read'], 'post-reader');
    writer = await agentWith(db.store, 'acme', ['beliefs:write', 'beliefs:read'], 'post-writer');
  });
  afterAll(async () => {
    if (db) await expectInvariants(db.store);
    await waker?.stop();
  });

  const headersFor = (token: string | null, accept?: string) => ({
    'content-type': 'application/json',
    ...(accept ? { accept } : {}),
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });

  const cases: Array<[string, () => { token: string | null; body: unknown }]> = [
    ['a query that succeeds', () => ({ token: reader.token, body: { query: '{ viewer { name } }' } })],
    ['no token (UNAUTHENTICATED)', () => ({ token: null, body: { query: '{ viewer { name } }' } })],
    ['a bad token', () => ({ token: 'not-a-token-of-this-server-000000', body: { query: '{ viewer { name } }' } })],
    [
      'a mutation the scopes refuse (FORBIDDEN)',
      () => ({
        token: reader.token,
        body: {
          query: 'mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { __typename } }',
          variables: { i: { claimKey: 'post/forbidden', statement: 'refused', value: 1 } },
        },
      }),
    ],
    [
      'a mutation whose input the service refuses (BAD_USER_INPUT, nothing written)',
      () => ({
        token: writer.token,
        body: {
          query: 'mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { __typename } }',
          variables: { i: { claimKey: '', statement: 'no claim', value: 1 } },
        },
      }),
    ],
    [
      'variables of the wrong type',
      () => ({
        token: reader.token,
        body: { query: 'query($k: String!) { beliefByClaim(claimKey: $k) { id } }', variables: { k: 42 } },
      }),
    ],
    [
      'a named operation of several',
      () => ({
        token: reader.token,
        body: { query: 'query A { viewer { name } } query B { __typename }', operationName: 'B' },
      }),
    ],
  ];

  for (const accept of [undefined, 'application/json', 'application/graphql-response+json']) {
    for (const [what, make] of cases) {
      it(`${what}, Accept ${accept ?? 'absent'}: the same status, headers and body as Yoga's`, async () => {
        const { token, body } = make();
        const text = JSON.stringify(body);
        const fast = await answerPost(yoga, headersFor(token, accept), Buffer.from(text));
        expect(fast).not.toBeNull();
        expect(fast).toEqual(await viaYoga(yoga, headersFor(token, accept), text));
      });
    }
  }

  it('a successful mutation answers what Yoga would, and writes once', async () => {
    const body = (k: string) =>
      JSON.stringify({
        query:
          'mutation($i: AssertBeliefInput!) { assertBelief(input: $i) { __typename ... on BeliefAsserted { belief { claimKey status } } } }',
        variables: { i: { claimKey: k, statement: `post ${k}`, value: 1 } },
      });
    const fast = await answerPost(yoga, headersFor(writer.token), Buffer.from(body('post/fast')));
    const slow = await viaYoga(yoga, headersFor(writer.token), body('post/yoga'));
    expect(fast!.status).toBe(slow.status);
    expect(fast!.headers).toEqual(slow.headers);
    expect(fast!.body.replace('post/fast', 'post/yoga')).toBe(slow.body);
    expect(JSON.parse(fast!.body).data.assertBelief).toEqual({
      __typename: 'BeliefAsserted',
      belief: { claimKey: 'post/fast', status: 'ACTIVE' },
    });
  });

  const declined: Array<[string, string, Record<string, string>?]> = [
    ['a batch', JSON.stringify([{ query: '{ __typename }' }])],
    ['a syntax error', JSON.stringify({ query: '{ viewer { ' })],
    ['a validation error', JSON.stringify({ query: '{ noSuchField }' })],
    ['several operations and no name', JSON.stringify({ query: 'query A { viewer { name } } query B { __typename }' })],
    ['a page over the connection rule', JSON.stringify({ query: '{ beliefs(first: 100000) { totalCount } }' })],
    ['extensions', JSON.stringify({ query: '{ __typename }', extensions: {} })],
    ['an unknown parameter', JSON.stringify({ query: '{ __typename }', queryId: 'x' })],
    ['no query', JSON.stringify({ variables: {} })],
    ['variables that are not an object', JSON.stringify({ query: '{ __typename }', variables: [1] })],
    ['JSON that does not parse', '{"query": '],
    [
      'an Accept this path does not answer',
      JSON.stringify({ query: '{ __typename }' }),
      { accept: 'text/event-stream' },
    ],
  ];
  it('declines a subscription: null (Yoga streams it over SSE)', async () => {
    const text = JSON.stringify({ query: 'subscription { retractionEvents { cursor } }' });
    expect(await answerPost(yoga, headersFor(reader.token), Buffer.from(text))).toBeNull();
  });
  for (const [what, text, extra] of declined) {
    it(`declines ${what}: null, and Yoga answers it`, async () => {
      const headers = { ...headersFor(reader.token), ...extra };
      expect(await answerPost(yoga, headers, Buffer.from(text))).toBeNull();
      const slow = await viaYoga(yoga, headers, text);
      expect(slow.status).toBeGreaterThanOrEqual(200);
    });
  }
});
