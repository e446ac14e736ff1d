import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/server/app';
import { startApiServer } from '../support/api-server';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { gid } from '../../src/kernel/ids';
import { coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { digestTables } from '../support/digest';
import { gql, subscribeWs, type WireError } from '../support/api-client';
import { callError, httpClient } from '../mcp/support';
import { belief, executed, proposed } from '../support/story';

/** Input rules a hostile client probed (issue 15): each refusal is BAD_USER_INPUT or CONFLICT naming the field, and writes nothing. */
const raw = (s: string) => Buffer.from(s).toString('base64url');
const ASSERT =
  'mutation($input: AssertBeliefInput!) { assertBelief(input: $input) { __typename ... on BeliefAsserted { belief { id claimKey } } ... on BeliefCorroborated { belief { id claimKey } } } }';
const PROPOSE =
  'mutation($input: ProposeEffectInput!) { proposeEffect(input: $input) { __typename ... on EffectProposed { effect { id } } } }';

describe.each(engines())('input rules on %s', (engine) => {
  let t: TestDb;
  let app: App;
  let url: string;
  let token: string;
  let b1: string;
  let b2: string;
  let retraction: string;
  const one = (r: { errors?: WireError[] }) => {
    expect(r.errors, JSON.stringify(r.errors)).toHaveLength(1);
    return r.errors![0]!;
  };
  /** Runs `body` and checks that no table changed and the invariants hold. */
  const writesNothing = async (body: () => Promise<void>) => {
    const before = await digestTables(t.store);
    await body();
    expect(await digestTables(t.store)).toEqual(before);
    await expectInvariants(t.store);
  };

  beforeAll(async () => {
    ({ db: t, app } = await startApiServer(engine, { config: { logLevel: 'fatal' } }));
    url = `${app.url()}/graphql`;
    const a = await createAgentDirect(t.store, { fleet: 'in', name: 'inputs', scopes: SCOPES });
    token = a.token;
    const core = coreOf(t.store);
    const actor = { fleet: 'in', agentId: a.agent.id };
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    await registerEffectKind(core, actor, { kind: 'charge', reversible: false });
    const [x, y, r] = [
      await belief(core, actor, 'in/b1'),
      await belief(core, actor, 'in/b2'),
      await belief(core, actor, 'in/r'),
    ];
    [b1, b2] = [gid('Belief', x.id), gid('Belief', y.id)];
    await executed(core, actor, await proposed(core, actor, 'refund', [r], 'in:owed', 500), 'bank-1');
    retraction = gid(
      'Retraction',
      (await retractBelief(core, actor, { beliefId: r.id, reason: 'fixture' })).retractionId,
    );
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  it('a lone surrogate anywhere in a JSON value or payload, keys included, is BAD_USER_INPUT naming the field', async () => {
    await writesNothing(async () => {
      const values: Array<[unknown, RegExp]> = [
        ['lone \ud800 high', /^value: .*lone surrogates.*at value\)/],
        [{ deep: [1, { text: 'x\udc00' }] }, /at value\["deep"\]\[1\]\["text"\]/],
        [{ ['key\ud83d']: 1 }, /the key value\["key\\ud83d"\]/],
        [[{ ok: '🙂', nested: { ['\udfff']: true } }], /the key value\[0\]\["nested"\]\["\\udfff"\]/],
      ];
      for (const [value, message] of values) {
        const e = one(await gql(url, ASSERT, { input: { claimKey: 'in/lone', statement: 's', value } }, token));
        expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'value' });
        expect(e.message).toMatch(message);
      }
      const e = one(
        await gql(
          url,
          PROPOSE,
          {
            input: {
              kind: 'refund',
              supportedBy: [b1],
              idempotencyKey: 'in:lone',
              payload: { to: { ['acct\udbff']: 'x' } },
            },
          },
          token,
        ),
      );
      expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'payload' });
    });
    // A well-formed pair is fine, in keys and values alike.
    const ok = await gql(
      url,
      ASSERT,
      { input: { claimKey: 'in/pair', statement: 's', value: { ['🙂']: '🙂' } } },
      token,
    );
    expect(ok.data.assertBelief.__typename).toBe('BeliefAsserted');
  });

  it('connection cursors and global ids with components beyond their bigint columns are BAD_USER_INPUT naming the field', async () => {
    await writesNothing(async () => {
      const huge = '9223372036854775808';
      for (const [query, vars, field] of [
        ['query($a: String) { beliefs(after: $a) { totalCount } }', { a: raw(`i1:${huge}`) }, 'after'],
        ['query($a: String) { effects(after: $a) { totalCount } }', { a: raw('i1:99999999999999999999') }, 'after'],
        [
          'query($id: ID!, $a: String) { node(id: $id) { ... on Retraction { beliefs(after: $a) { totalCount } } } }',
          { id: retraction, a: raw(`d1:0:${huge}`) },
          'after',
        ],
        [
          'query($id: ID!, $a: String) { node(id: $id) { ... on Retraction { beliefs(after: $a) { totalCount } } } }',
          { id: retraction, a: raw('d1:2147483648:1') },
          'after',
        ],
        [
          'query($id: ID!, $a: String) { previewRetraction(beliefId: $id) { beliefs(first: 5, after: $a) { totalCount } } }',
          { id: b1, a: raw(`d1:0:${huge}`) },
          'after',
        ],
        [
          'mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id } }',
          { i: { beliefId: gid('Belief', huge), reason: 'r' } },
          'input.beliefId',
        ],
        ['query($id: ID!) { belief(id: $id) { id } }', { id: gid('Belief', huge) }, 'id'],
      ] as Array<[string, Record<string, unknown>, string]>) {
        const e = one(await gql(url, query, vars, token));
        expect(e.extensions?.code, `${query} ${JSON.stringify(vars)}: ${e.message}`).toBe('BAD_USER_INPUT');
        expect(e.message.startsWith(`${field}: `), e.message).toBe(true);
      }
    });
  });

  it('MCP cursors beyond their columns are BAD_USER_INPUT naming after', async () => {
    const client = await httpClient(`${app.url()}/mcp`, token);
    try {
      expect(await callError(client, 'get_receipt', { after: raw('d1:0:9223372036854775808') })).toMatch(
        /^BAD_USER_INPUT: after: /,
      );
      expect(await callError(client, 'list_owed_reversals', { after: raw('o1:9999999999999999999') })).toMatch(
        /^BAD_USER_INPUT: after: /,
      );
    } finally {
      await client.close();
    }
  });

  it('subscription cursors: components beyond xid8 and bigint, and a cursor from the future, are refused at once', async () => {
    const xmax = await t.store.db
      .transaction()
      .execute(
        async (tx) =>
          (await sql<{ x: string }>`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x`.execute(tx)).rows[0]!.x,
      );
    const cursors: Array<[string, RegExp]> = [
      [raw('e1:99999999999999999999:1:-1'), /xid8/],
      [raw('e1:18446744073709551616:1:-1'), /xid8/],
      [raw('e1:1:9223372036854775808:-1'), /seq/],
      [raw('e1:1:1:2147483648'), /index/],
      [raw('e1:18446744073709551615:1:-1'), /has not reached/],
      [raw(`e1:${BigInt(xmax) + 1000n}:1:-1`), /has not reached/],
    ];
    const ws = `${app.url().replace('http', 'ws')}/graphql`;
    for (const [after, why] of cursors) {
      const sub = subscribeWs(
        ws,
        'subscription($after: String) { retractionEvents(after: $after) { cursor } }',
        { after },
        token,
      );
      await sub.until(
        (c) => c.errors.length > 0 || c.completed,
        5_000,
        `a refusal of ${Buffer.from(after, 'base64url')}`,
      );
      expect(sub.errors.map((e) => [e.extensions?.code, e.extensions?.field])).toEqual([['BAD_USER_INPUT', 'after']]);
      expect(sub.errors[0]!.message).toMatch(why);
      await sub.close();
    }
    // The log's origin is still a valid cursor.
    const origin = subscribeWs(
      ws,
      'subscription($after: String) { retractionEvents(after: $after) { __typename } }',
      { after: raw('e1:0:0:-1') },
      token,
    );
    await origin.until((c) => c.events.length > 0 || c.errors.length > 0, 10_000, 'the fixture retraction');
    expect(origin.errors).toEqual([]);
    await origin.close();
  });

  it('reusing an idempotency key for a different proposal is a CONFLICT naming the first effect; repeating it returns the first', async () => {
    const first = {
      kind: 'refund',
      supportedBy: [b1, b2],
      idempotencyKey: 'in:idem',
      amount: { amountMinor: 100, currency: 'USD' },
      payload: { a: 1, b: [2] },
    };
    const made = await gql(url, PROPOSE, { input: first }, token);
    const effectId = made.data.proposeEffect.effect.id;
    const again = await gql(
      url,
      PROPOSE,
      { input: { ...first, supportedBy: [b2, b1, b2], payload: { b: [2], a: 1 } } },
      token,
    );
    expect(again.data.proposeEffect.effect.id).toBe(effectId);
    await writesNothing(async () => {
      for (const [change, named] of [
        [{ amount: { amountMinor: 101, currency: 'USD' } }, 'amount'],
        [{ amount: { amountMinor: 100, currency: 'EUR' } }, 'currency'],
        [{ amount: null }, 'amount, currency'],
        [{ kind: 'charge' }, 'kind'],
        [{ payload: { a: 2, b: [2] } }, 'payload'],
        [{ payload: null }, 'payload'],
        [{ supportedBy: [b1] }, 'supportedBy'],
      ] as Array<[object, string]>) {
        const e = one(await gql(url, PROPOSE, { input: { ...first, ...change } }, token));
        expect(e.extensions).toMatchObject({ code: 'CONFLICT', field: 'idempotencyKey', effectId });
        expect(e.message).toContain(`different ${named};`);
      }
    });
  });

  it('currencies must be ISO 4217 codes', async () => {
    await writesNothing(async () => {
      for (const currency of ['XYZ', 'ABC', 'QQQ']) {
        const e = one(
          await gql(
            url,
            PROPOSE,
            {
              input: {
                kind: 'refund',
                supportedBy: [b1],
                idempotencyKey: `in:cur:${currency}`,
                amount: { amountMinor: 1, currency },
              },
            },
            token,
          ),
        );
        expect(e.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'amount.currency' });
        expect(e.message).toMatch(/ISO 4217/);
      }
    });
    for (const currency of ['JPY', 'EUR', 'CHF']) {
      const r = await gql(
        url,
        PROPOSE,
        {
          input: {
            kind: 'refund',
            supportedBy: [b1],
            idempotencyKey: `in:cur:${currency}`,
            amount: { amountMinor: 1, currency },
          },
        },
        token,
      );
      expect(r.data?.proposeEffect.__typename, JSON.stringify(r.errors)).toBe('EffectProposed');
    }
  });

  it('claim keys are NFC-normalised: composed and decomposed spellings name one claim', async () => {
    const composed = 'in/caf\u00e9';
    const decomposed = 'in/cafe\u0301';
    const a = await gql(
      url,
      ASSERT,
      { input: { claimKey: decomposed, statement: 'the café is open', value: true } },
      token,
    );
    expect(a.data.assertBelief).toMatchObject({ __typename: 'BeliefAsserted', belief: { claimKey: composed } });
    const b = await gql(
      url,
      ASSERT,
      { input: { claimKey: composed, statement: 'the café is open', value: true } },
      token,
    );
    expect(b.data.assertBelief).toMatchObject({
      __typename: 'BeliefCorroborated',
      belief: { id: a.data.assertBelief.belief.id },
    });
    const listed = await gql(
      url,
      'query($p: String) { beliefs(claimKeyPrefix: $p) { totalCount edges { node { claimKey } } } }',
      { p: 'in/cafe\u0301' },
      token,
    );
    expect(listed.data.beliefs).toEqual({ totalCount: 1, edges: [{ node: { claimKey: composed } }] });
    await expectInvariants(t.store);
  });
});
