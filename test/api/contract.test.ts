import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { SCOPES } from '../../src/agent/scopes';
import { hashToken } from '../../src/agent/token';
import { engines, expectInvariants } from '../support/engines';
import { codes, dbId, gql, ok, type GqlResponse } from '../support/api-client';
import {
  type ApiServer,
  BOOTSTRAP_TOKEN,
  GatedHeuristic,
  agentWith,
  startApiServer,
  tableDigests,
} from '../support/api-server';

const USD = (amountMinor: number) => [{ amountMinor, currency: 'USD' }];
const BELIEF = 'id claimKey statement value status evidence createdAt retractedAt author { id name } retraction { id }';
const TOTALS =
  'totals { beliefsRetracted effectsCancelled effectsReached reversalsOwed unreachable exposure { amountMinor currency } owed { amountMinor currency } unreachableAmount { amountMinor currency } settled { amountMinor currency } }';

const ASSERT = /* GraphQL */ `
  mutation Assert($input: AssertBeliefInput!) {
    assertBelief(input: $input) {
      __typename
      ... on BeliefAsserted { belief { ${BELIEF} justifications { id holds premises { id } } } }
      ... on BeliefCorroborated { belief { id } }
      ... on ContradictionRaised { contradiction { id status claimKey existing { id } proposed { claimKey statement value evidence author { id } } } }
      ... on PremiseRetracted { premise { id status } }
      ... on ClaimChangedSinceRead { claimKey current { id value } }
    }
  }`;

const PROPOSE = /* GraphQL */ `
  mutation Propose($input: ProposeEffectInput!) {
    proposeEffect(input: $input) {
      __typename
      ... on EffectProposed {
        effect {
          id
          kind
          status
          idempotencyKey
          amount {
            amountMinor
            currency
          }
          payload
          supportedBy {
            id
          }
          proposedBy {
            id
          }
          createdAt
        }
      }
      ... on PremiseRetracted {
        premise {
          id
          status
        }
      }
    }
  }
`;

/**
 * Every query and mutation of the contract, once each at least, over real HTTP against a listening
 * server, told as one story: an agent is created, the passport story is built through the API, the
 * passport is retracted, the refund reversal is confirmed, contradictions are adjudicated.
 */
describe.each(engines())('the GraphQL contract over HTTP on %s', (engine) => {
  let s: ApiServer;
  let token: string;
  const adjudicator = new GatedHeuristic();
  const q = async <T = any>(
    query: string,
    variables: Record<string, unknown> = {},
    tk: string | null = token,
  ): Promise<T> => ok<T>(await gql<T>(s.http, query, variables, tk));
  const raw = (
    query: string,
    variables: Record<string, unknown> = {},
    tk: string | null = token,
  ): Promise<GqlResponse> => gql(s.http, query, variables, tk);
  const assertB = async (input: Record<string, unknown>) => (await q(ASSERT, { input })).assertBelief;
  const asserted = async (claimKey: string, derivedFrom: string[] = [], value: unknown = true, evidence?: string) => {
    const r = await assertB({
      claimKey,
      statement: `${claimKey} holds`,
      value,
      derivedFrom,
      ...(evidence ? { evidence } : {}),
    });
    expect(r.__typename).toBe('BeliefAsserted');
    return r.belief as { id: string; claimKey: string; status: string; author: { id: string } };
  };
  /** Global ids (and one serialised preview) the story's steps hand to later steps. */
  const ids = {} as Record<
    | 'address'
    | 'c1'
    | 'charge'
    | 'failed'
    | 'identity'
    | 'kycTier'
    | 'owedReversal'
    | 'passport'
    | 'pending'
    | 'phone'
    | 'previewTotals'
    | 'refund'
    | 'refundEligible'
    | 'retraction'
    | 'unreachableReversal'
    | 'utilityBill',
    string
  >;
  let me: { id: string; name: string };

  beforeAll(async () => {
    s = await startApiServer(engine, { adjudicator });
  });
  afterAll(async () => {
    adjudicator.release();
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it('createAgent: the operator creates an agent in another fleet; the token is shown once, works, and only its hash is kept', async () => {
    const r = await q(
      `mutation($input: CreateAgentInput!) { createAgent(input: $input) { token agent { id name fleet scopes } } }`,
      { input: { name: 'refund-bot', scopes: SCOPES, fleet: 'acme' } },
      BOOTSTRAP_TOKEN,
    );
    token = r.createAgent.token;
    expect(token).toMatch(/^rt_[A-Za-z0-9_-]{40,}$/);
    expect(r.createAgent.agent).toMatchObject({ name: 'refund-bot', fleet: 'acme', scopes: [...SCOPES] });
    const v = await q('{ viewer { id name fleet scopes } }');
    expect(v.viewer).toEqual(r.createAgent.agent);
    me = v.viewer;
    // Only the hash is stored; the Agent type has no way to read a token back.
    const row = await sql<{
      token_hash: string;
    }>`SELECT token_hash FROM agent_tokens WHERE fleet_id = 'acme' AND agent_id = ${dbId(me.id, 'Agent')}`.execute(
      s.db.store.db,
    );
    expect(row.rows[0]!.token_hash).toBe(hashToken(token));
    expect(row.rows[0]!.token_hash).not.toContain(token);
    const introspect = await q(`{ __type(name: "Agent") { fields { name } } }`);
    expect(introspect.__type.fields.map((f: { name: string }) => f.name)).not.toContain('token');
    // An admin who is not the operator creates agents in its own fleet only.
    const inFleet = await q(
      `mutation { createAgent(input: { name: "reader", scopes: ["beliefs:read"] }) { token agent { fleet scopes } } }`,
    );
    expect(inFleet.createAgent.agent).toEqual({ fleet: 'acme', scopes: ['beliefs:read'] });
    const elsewhere = await raw(
      `mutation { createAgent(input: { name: "intruder", scopes: ["admin"], fleet: "globex" }) { token } }`,
    );
    expect(codes(elsewhere.errors)).toEqual(['FORBIDDEN']);
    expect(elsewhere.errors![0]!.extensions!.field).toBe('fleet');
    const dup = await raw(`mutation { createAgent(input: { name: "reader", scopes: ["beliefs:read"] }) { token } }`);
    expect(codes(dup.errors)).toEqual(['CONFLICT']);
  });

  it('registerEffectKind and effectKinds: kinds with and without a compensation handler; changing one later is a CONFLICT', async () => {
    for (const [kind, reversible] of [
      ['refund', true],
      ['card_charge', false],
      ['payout', true],
    ] as const) {
      const r = await q(
        `mutation($i: RegisterEffectKindInput!) { registerEffectKind(input: $i) { kind reversible } }`,
        { i: { kind, reversible } },
      );
      expect(r.registerEffectKind).toEqual({ kind, reversible });
    }
    expect((await q('{ effectKinds { kind reversible } }')).effectKinds).toEqual([
      { kind: 'card_charge', reversible: false },
      { kind: 'payout', reversible: true },
      { kind: 'refund', reversible: true },
    ]);
    const again = await raw(`mutation { registerEffectKind(input: { kind: "refund", reversible: false }) { kind } }`);
    expect(codes(again.errors)).toEqual(['CONFLICT']);
  });

  it('assertBelief: BeliefAsserted for the passport story, BeliefCorroborated for the same value, with premises and justifications', async () => {
    const passport = await assertB({
      claimKey: 'customer:4411/passport.authentic',
      statement: 'The passport of customer 4411 is authentic',
      value: true,
      evidence: 'document check #A-77',
    });
    expect(passport.__typename).toBe('BeliefAsserted');
    expect(passport.belief).toMatchObject({
      claimKey: 'customer:4411/passport.authentic',
      statement: 'The passport of customer 4411 is authentic',
      value: true,
      status: 'ACTIVE',
      evidence: 'document check #A-77',
      retractedAt: null,
      retraction: null,
      author: { id: me.id, name: me.name },
      justifications: [],
    });
    expect(Date.parse(passport.belief.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    ids.passport = passport.belief.id;
    const identity = await assertB({
      claimKey: 'customer:4411/identity.verified',
      statement: 'identity verified',
      value: true,
      derivedFrom: [ids.passport],
    });
    expect(identity.belief.justifications).toEqual([
      { id: expect.any(String), holds: true, premises: [{ id: ids.passport }] },
    ]);
    ids.identity = identity.belief.id;
    ids.refundEligible = (await asserted('customer:4411/refund.eligible', [ids.identity])).id;
    ids.kycTier = (await asserted('customer:4411/kyc.tier', [ids.passport], 'gold')).id;
    ids.address = (await asserted('customer:4411/address.confirmed', [ids.passport])).id;
    ids.utilityBill = (await asserted('customer:4411/utility.bill', [], true, 'utility bill March')).id;

    const corroborated = await assertB({
      claimKey: 'customer:4411/kyc.tier',
      statement: 'tier is gold',
      value: 'gold',
    });
    expect(corroborated).toEqual({ __typename: 'BeliefCorroborated', belief: { id: ids.kycTier } });
    const count = await q(`query($p: String) { beliefs(claimKeyPrefix: $p) { totalCount } }`, {
      p: 'customer:4411/kyc.tier',
    });
    expect(count.beliefs.totalCount).toBe(1);
  });

  it('addJustification: an alternative support is added; one that would make a cycle is a CONFLICT', async () => {
    const r = await q(
      `mutation($b: ID!, $p: [ID!]!) { addJustification(input: { beliefId: $b, premises: $p }) { id justifications { holds premises { id } } } }`,
      { b: ids.address, p: [ids.utilityBill] },
    );
    expect(r.addJustification.id).toBe(ids.address);
    expect(
      r.addJustification.justifications
        .map((j: { premises: Array<{ id: string }> }) => j.premises.map((p) => p.id))
        .sort(),
    ).toEqual([[ids.passport], [ids.utilityBill]].sort());
    const before = await tableDigests(s.db.store);
    const cycle = await raw(
      `mutation($b: ID!, $p: [ID!]!) { addJustification(input: { beliefId: $b, premises: $p }) { id } }`,
      { b: ids.passport, p: [ids.refundEligible] },
    );
    expect(codes(cycle.errors)).toEqual(['CONFLICT']);
    expect(cycle.errors![0]!.message).toMatch(/cycle/);
    expect(cycle.errors![0]!.extensions!.field).toBe('premises');
    expect(cycle.data).toBeNull();
    expect(await tableDigests(s.db.store)).toEqual(before);
  });

  it('proposeEffect (idempotent by key), claimEffect, completeEffect, failEffect and effects(status)', async () => {
    const propose = async (kind: string, support: string, key: string, amountMinor: number, payload?: unknown) =>
      (
        await q(PROPOSE, {
          input: {
            kind,
            supportedBy: [support],
            idempotencyKey: key,
            amount: { amountMinor, currency: 'USD' },
            payload,
          },
        })
      ).proposeEffect;
    const refund = await propose('refund', ids.refundEligible, 'customer:4411:refund-1', 124_000, {
      iban: 'DE00 0000',
    });
    expect(refund).toMatchObject({
      __typename: 'EffectProposed',
      effect: {
        kind: 'refund',
        status: 'PENDING',
        idempotencyKey: 'customer:4411:refund-1',
        amount: USD(124_000)[0],
        payload: { iban: 'DE00 0000' },
        supportedBy: [{ id: ids.refundEligible }],
        proposedBy: { id: me.id },
      },
    });
    ids.refund = refund.effect.id;
    const again = await propose('refund', ids.refundEligible, 'customer:4411:refund-1', 124_000, { iban: 'DE00 0000' });
    expect(again.effect.id).toBe(ids.refund);
    expect(again.effect.amount).toEqual(USD(124_000)[0]);
    // The same key for another proposal names the first effect rather than returning it.
    const reused = await raw(PROPOSE, {
      input: {
        kind: 'refund',
        supportedBy: [ids.refundEligible],
        idempotencyKey: 'customer:4411:refund-1',
        amount: { amountMinor: 999, currency: 'USD' },
      },
    });
    expect(codes(reused.errors)).toEqual(['CONFLICT']);
    expect(reused.errors![0]!.extensions).toMatchObject({ field: 'idempotencyKey', effectId: ids.refund });

    const claimed = await q(`mutation { claimEffect(input: { kinds: ["refund"] }) { id status } }`);
    expect(claimed.claimEffect).toEqual({ id: ids.refund, status: 'EXECUTING' });
    expect((await q(`mutation { claimEffect(input: { kinds: ["refund"] }) { id } }`)).claimEffect).toBeNull();
    const done = await q(
      `mutation($e: ID!) { completeEffect(input: { effectId: $e, externalRef: "bank-ref-1" }) { id status externalRef executedAt } }`,
      { e: ids.refund },
    );
    expect(done.completeEffect).toMatchObject({ id: ids.refund, status: 'EXECUTED', externalRef: 'bank-ref-1' });
    expect(done.completeEffect.executedAt).not.toBeNull();

    ids.charge = (await propose('card_charge', ids.kycTier, 'customer:4411:charge-1', 8_900)).effect.id;
    expect((await q(`mutation { claimEffect { id } }`)).claimEffect.id).toBe(ids.charge);
    await q(`mutation($e: ID!) { completeEffect(input: { effectId: $e, externalRef: "card-ref-1" }) { id } }`, {
      e: ids.charge,
    });

    ids.failed = (await propose('payout', ids.identity, 'customer:4411:payout-0', 10_000)).effect.id;
    const failed = await q(
      `mutation($e: ID!) { failEffect(input: { effectId: $e, reason: "bank refused the payout" }) { id status } }`,
      { e: ids.failed },
    );
    expect(failed.failEffect).toEqual({ id: ids.failed, status: 'FAILED' });
    ids.pending = (await propose('payout', ids.identity, 'customer:4411:payout-1', 50_000)).effect.id;

    const byStatus = async (status: string) =>
      (
        await q(`query($s: EffectStatus) { effects(status: $s) { totalCount edges { node { id status } } } }`, {
          s: status,
        })
      ).effects;
    expect((await byStatus('EXECUTED')).edges.map((e: { node: { id: string } }) => e.node.id)).toEqual([
      ids.charge,
      ids.refund,
    ]);
    expect(await byStatus('FAILED')).toEqual({
      totalCount: 1,
      edges: [{ node: { id: ids.failed, status: 'FAILED' } }],
    });
    expect(await byStatus('PENDING')).toEqual({
      totalCount: 1,
      edges: [{ node: { id: ids.pending, status: 'PENDING' } }],
    });
    const all = (await q(`{ effects { totalCount edges { node { id } } } }`)).effects;
    expect(all.totalCount).toBe(4);
    // A belief lists the effects resting on it.
    expect(
      (await q(`query($id: ID!) { belief(id: $id) { effects { id } } }`, { id: ids.identity })).belief.effects
        .map((e: { id: string }) => e.id)
        .sort(),
    ).toEqual([ids.failed, ids.pending].sort());
  });

  it('search: a snapshot and hits; assertBelief basedOn that snapshot commits, or answers ClaimChangedSinceRead when the claim was written since', async () => {
    const r = await q(
      `query($i: SearchInput!) { search(input: $i) { snapshot hits { score belief { id claimKey status } } } }`,
      { i: { text: 'The passport of customer 4411 is authentic', k: 3 } },
    );
    expect(typeof r.search.snapshot).toBe('string');
    expect(r.search.hits[0].belief).toEqual({
      id: ids.passport,
      claimKey: 'customer:4411/passport.authentic',
      status: 'ACTIVE',
    });
    expect(r.search.hits[0].score).toBeGreaterThan(0.99);
    expect(r.search.hits.length).toBe(3);
    for (let i = 1; i < r.search.hits.length; i++)
      expect(r.search.hits[i - 1].score).toBeGreaterThanOrEqual(r.search.hits[i].score);
    const prefixed = await q(`query($i: SearchInput!) { search(input: $i) { hits { belief { claimKey } } } }`, {
      i: { text: 'utility bill', k: 10, claimKeyPrefix: 'customer:4411/u' },
    });
    expect(prefixed.search.hits.map((h: { belief: { claimKey: string } }) => h.belief.claimKey)).toEqual([
      'customer:4411/utility.bill',
    ]);

    const snapshot = r.search.snapshot;
    const fresh = await assertB({
      claimKey: 'customer:4411/note',
      statement: 'a note based on the read',
      value: 1,
      basedOn: snapshot,
    });
    expect(fresh.__typename).toBe('BeliefAsserted');
    // Another agent writes the claim after the READ; the COMMIT based on that READ is refused.
    const other = await agentWith(s.db.store, 'acme', ['beliefs:write', 'beliefs:read'], 'other');
    const theirs = ok(
      await gql(
        s.http,
        ASSERT,
        { input: { claimKey: 'customer:4411/phone', statement: 'phone is 555-0100', value: '555-0100' } },
        other.token,
      ),
    ).assertBelief;
    expect(theirs.__typename).toBe('BeliefAsserted');
    const before = await tableDigests(s.db.store);
    const changed = await assertB({
      claimKey: 'customer:4411/phone',
      statement: 'phone is 555-0199',
      value: '555-0199',
      basedOn: snapshot,
    });
    expect(changed).toEqual({
      __typename: 'ClaimChangedSinceRead',
      claimKey: 'customer:4411/phone',
      current: { id: theirs.belief.id, value: '555-0100' },
    });
    expect(await tableDigests(s.db.store)).toEqual(before);
    ids.phone = theirs.belief.id;
  });

  it('previewRetraction: what would fall, the survivor with another support, pending and executed effects, totals — and nothing changes', async () => {
    const before = await tableDigests(s.db.store);
    const r = await q(
      `query($id: ID!) { previewRetraction(beliefId: $id) {
        root { id } beliefs(first: 10) { totalCount edges { node { id status } } } survivors { id status }
        pendingEffects { id } executedEffects { id } ${TOTALS} } }`,
      { id: ids.passport },
    );
    const p = r.previewRetraction;
    expect(p.root).toEqual({ id: ids.passport });
    expect(p.beliefs.totalCount).toBe(4);
    expect(p.beliefs.edges[0].node.id).toBe(ids.passport);
    expect(p.beliefs.edges.map((e: { node: { id: string } }) => e.node.id).sort()).toEqual(
      [ids.passport, ids.identity, ids.refundEligible, ids.kycTier].sort(),
    );
    // It is a preview: every belief still reads ACTIVE.
    expect(p.beliefs.edges.every((e: { node: { status: string } }) => e.node.status === 'ACTIVE')).toBe(true);
    expect(p.survivors).toEqual([{ id: ids.address, status: 'ACTIVE' }]);
    expect(p.pendingEffects).toEqual([{ id: ids.pending }]);
    expect(p.executedEffects.map((e: { id: string }) => e.id).sort()).toEqual([ids.refund, ids.charge].sort());
    expect(p.totals).toEqual({
      beliefsRetracted: 4,
      effectsCancelled: 1,
      effectsReached: 2,
      reversalsOwed: 1,
      unreachable: 1,
      exposure: USD(132_900),
      owed: USD(124_000),
      unreachableAmount: USD(8_900),
      settled: USD(0),
    });
    ids.previewTotals = JSON.stringify(p.totals);
    expect(await tableDigests(s.db.store)).toEqual(before);
  });

  it('retractBelief: the passport story figures; a second call returns the same receipt and writes nothing', async () => {
    const RETRACT = `mutation($b: ID!, $r: String!) { retractBelief(input: { beliefId: $b, reason: $r }) {
        id reason createdAt root { id status } actor { id }
        beliefs(first: 10) { totalCount edges { node { id status retractedAt retraction { id } } } }
        cancelledEffects { id status cancelledBy { id } } reversals { id status idempotencyKey amount { amountMinor currency } effect { id } retraction { id } }
        ${TOTALS} } }`;
    const r = (await q(RETRACT, { b: ids.passport, r: 'passport came back forged' })).retractBelief;
    ids.retraction = r.id;
    expect(r).toMatchObject({
      reason: 'passport came back forged',
      root: { id: ids.passport, status: 'RETRACTED' },
      actor: { id: me.id },
    });
    expect(r.totals).toEqual({
      beliefsRetracted: 4,
      effectsCancelled: 1,
      effectsReached: 2,
      reversalsOwed: 1,
      unreachable: 1,
      exposure: USD(132_900),
      owed: USD(124_000),
      unreachableAmount: USD(8_900),
      settled: USD(0),
    });
    expect(JSON.stringify(r.totals)).toBe(ids.previewTotals);
    expect(r.beliefs.totalCount).toBe(4);
    expect(r.beliefs.edges[0].node.id).toBe(ids.passport);
    for (const e of r.beliefs.edges) expect(e.node).toMatchObject({ status: 'RETRACTED', retraction: { id: r.id } });
    expect(r.cancelledEffects).toEqual([{ id: ids.pending, status: 'CANCELLED', cancelledBy: { id: r.id } }]);
    const byEffect = Object.fromEntries(r.reversals.map((x: { effect: { id: string } }) => [x.effect.id, x]));
    expect(byEffect[ids.refund]).toMatchObject({
      status: 'OWED',
      idempotencyKey: 'reversal:customer:4411:refund-1',
      amount: USD(124_000)[0],
      retraction: { id: r.id },
    });
    expect(byEffect[ids.charge]).toMatchObject({
      status: 'UNREACHABLE',
      idempotencyKey: 'reversal:customer:4411:charge-1',
      amount: USD(8_900)[0],
    });
    ids.owedReversal = byEffect[ids.refund].id;
    ids.unreachableReversal = byEffect[ids.charge].id;

    const before = await tableDigests(s.db.store);
    const second = (await q(RETRACT, { b: ids.passport, r: 'again' })).retractBelief;
    expect(second.id).toBe(r.id);
    expect(second.reason).toBe('passport came back forged');
    expect(await tableDigests(s.db.store)).toEqual(before);

    // The survivor stands on its other justification.
    const addr = (
      await q(`query($id: ID!) { belief(id: $id) { status justifications { holds premises { id } } } }`, {
        id: ids.address,
      })
    ).belief;
    expect(addr.status).toBe('ACTIVE');
    expect(
      addr.justifications
        .map((j: { holds: boolean; premises: Array<{ id: string }> }) => [j.premises[0]!.id, j.holds])
        .sort(),
    ).toEqual(
      [
        [ids.passport, false],
        [ids.utilityBill, true],
      ].sort(),
    );
    // A retracted root previews as an empty cascade.
    const empty = await q(
      `query($id: ID!) { previewRetraction(beliefId: $id) { beliefs { totalCount } pendingEffects { id } totals { beliefsRetracted } } }`,
      { id: ids.passport },
    );
    expect(empty.previewRetraction).toEqual({
      beliefs: { totalCount: 0 },
      pendingEffects: [],
      totals: { beliefsRetracted: 0 },
    });
  });

  it('PremiseRetracted: a belief or an effect resting on a retracted belief is refused and nothing is written', async () => {
    const before = await tableDigests(s.db.store);
    const b = await assertB({
      claimKey: 'customer:4411/loyalty',
      statement: 'loyal',
      value: true,
      derivedFrom: [ids.identity],
    });
    expect(b).toEqual({ __typename: 'PremiseRetracted', premise: { id: ids.identity, status: 'RETRACTED' } });
    const e = (
      await q(PROPOSE, {
        input: { kind: 'refund', supportedBy: [ids.refundEligible], idempotencyKey: 'customer:4411:refund-2' },
      })
    ).proposeEffect;
    expect(e).toEqual({ __typename: 'PremiseRetracted', premise: { id: ids.refundEligible, status: 'RETRACTED' } });
    expect(await tableDigests(s.db.store)).toEqual(before);
  });

  it('retraction, retractions, reversals(status) and confirmReversal: settled moves only on the provider reference', async () => {
    const one = (
      await q(
        `query($id: ID!) { retraction(id: $id) { id root { id } beliefs(first: 2) { totalCount pageInfo { hasNextPage endCursor } edges { node { id } } } } }`,
        { id: ids.retraction },
      )
    ).retraction;
    expect(one.root.id).toBe(ids.passport);
    expect(one.beliefs.edges.length).toBe(2);
    expect(one.beliefs.pageInfo.hasNextPage).toBe(true);
    const rest = (
      await q(
        `query($id: ID!, $a: String) { retraction(id: $id) { beliefs(first: 10, after: $a) { pageInfo { hasNextPage } edges { node { id } } } } }`,
        { id: ids.retraction, a: one.beliefs.pageInfo.endCursor },
      )
    ).retraction;
    expect(rest.beliefs.pageInfo.hasNextPage).toBe(false);
    expect(
      [...one.beliefs.edges, ...rest.beliefs.edges].map((e: { node: { id: string } }) => e.node.id).sort(),
    ).toEqual([ids.passport, ids.identity, ids.refundEligible, ids.kycTier].sort());

    const list = (await q(`{ retractions { totalCount edges { node { id reason } } } }`)).retractions;
    expect(list).toEqual({
      totalCount: 1,
      edges: [{ node: { id: ids.retraction, reason: 'passport came back forged' } }],
    });

    const rev = async (status: string) =>
      (
        await q(
          `query($s: ReversalStatus) { reversals(status: $s) { totalCount edges { node { id status providerRef } } } }`,
          { s: status },
        )
      ).reversals;
    expect(await rev('OWED')).toEqual({
      totalCount: 1,
      edges: [{ node: { id: ids.owedReversal, status: 'OWED', providerRef: null } }],
    });
    expect(await rev('UNREACHABLE')).toEqual({
      totalCount: 1,
      edges: [{ node: { id: ids.unreachableReversal, status: 'UNREACHABLE', providerRef: null } }],
    });
    expect((await q(`{ reversals { totalCount } }`)).reversals.totalCount).toBe(2);

    const confirmed = await q(
      `mutation($r: ID!) { confirmReversal(input: { reversalId: $r, providerRef: "prv_7Q2K9" }) { id status providerRef confirmedAt } }`,
      { r: ids.owedReversal },
    );
    expect(confirmed.confirmReversal).toMatchObject({
      id: ids.owedReversal,
      status: 'CONFIRMED',
      providerRef: 'prv_7Q2K9',
    });
    expect(confirmed.confirmReversal.confirmedAt).not.toBeNull();
    expect(await rev('CONFIRMED')).toEqual({
      totalCount: 1,
      edges: [{ node: { id: ids.owedReversal, status: 'CONFIRMED', providerRef: 'prv_7Q2K9' } }],
    });
    const totals = (await q(`query($id: ID!) { retraction(id: $id) { ${TOTALS} } }`, { id: ids.retraction })).retraction
      .totals;
    expect(totals).toMatchObject({
      owed: USD(124_000),
      settled: USD(124_000),
      exposure: USD(132_900),
      unreachableAmount: USD(8_900),
    });
    const unreachable = await raw(
      `mutation($r: ID!) { confirmReversal(input: { reversalId: $r, providerRef: "prv_X" }) { id } }`,
      { r: ids.unreachableReversal },
    );
    expect(codes(unreachable.errors)).toEqual(['CONFLICT']);
  });

  it('adjudicateContradiction (heuristic): a second call while the lease is live is a CONFLICT; ACCEPT_PROPOSED retracts the existing and writes the proposal', async () => {
    const existing = await asserted('customer:4411/email', [], 'old@example.com', 'a rumour in a chat group');
    const raised = await assertB({
      claimKey: 'customer:4411/email',
      statement: 'email is new@example.com',
      value: 'new@example.com',
      evidence: 'verified document from the official registry',
    });
    expect(raised.__typename).toBe('ContradictionRaised');
    expect(raised.contradiction).toMatchObject({
      status: 'OPEN',
      claimKey: 'customer:4411/email',
      existing: { id: existing.id },
      proposed: {
        claimKey: 'customer:4411/email',
        statement: 'email is new@example.com',
        value: 'new@example.com',
        evidence: 'verified document from the official registry',
        author: { id: me.id },
      },
    });
    const cid = raised.contradiction.id;
    ids.c1 = cid;
    expect((await q(`{ contradictions(status: OPEN) { id } }`)).contradictions).toEqual([{ id: cid }]);

    const ADJ = `mutation($c: ID!) { adjudicateContradiction(contradictionId: $c) { id status verdict rationale adjudicator resolvedAt
        resolution { id root { id status } } accepted { id value status claimKey } existing { id status } } }`;
    adjudicator.hold();
    const first = raw(ADJ, { c: cid });
    // Wait until the first call holds the lease (the contradiction reads ADJUDICATING).
    for (let i = 0; ; i++) {
      const c = (await q(`{ contradictions(status: ADJUDICATING) { id } }`)).contradictions;
      if (c.length === 1) break;
      if (i > 200) throw new Error('the first adjudication never took the lease');
      await new Promise((r) => setTimeout(r, 25));
    }
    const second = await raw(ADJ, { c: cid });
    expect(codes(second.errors)).toEqual(['CONFLICT']);
    expect(second.errors![0]!.message).toMatch(/being adjudicated/);
    const resolveDuring = await raw(
      `mutation($c: ID!) { resolveContradiction(input: { contradictionId: $c, verdict: KEEP_EXISTING, rationale: "mine" }) { id } }`,
      { c: cid },
    );
    expect(codes(resolveDuring.errors)).toEqual(['CONFLICT']);
    expect(adjudicator.calls).toBe(1);
    adjudicator.release();
    const r = ok(await first).adjudicateContradiction;
    expect(r).toMatchObject({
      id: cid,
      status: 'RESOLVED',
      verdict: 'ACCEPT_PROPOSED',
      adjudicator: 'heuristic',
      existing: { id: existing.id, status: 'RETRACTED' },
    });
    expect(r.rationale).toMatch(/stronger/);
    expect(r.resolvedAt).not.toBeNull();
    expect(r.resolution.root).toEqual({ id: existing.id, status: 'RETRACTED' });
    expect(r.accepted).toMatchObject({ value: 'new@example.com', status: 'ACTIVE', claimKey: 'customer:4411/email' });
    expect(
      (await q(`query($k: String!) { beliefByClaim(claimKey: $k) { id } }`, { k: 'customer:4411/email' }))
        .beliefByClaim,
    ).toEqual({ id: r.accepted.id });
    const again = await raw(ADJ, { c: cid });
    expect(codes(again.errors)).toEqual(['CONFLICT']);
  });

  it("resolveContradiction: an agent's own verdict; contradictions(status) lists by status", async () => {
    const raised = await assertB({
      claimKey: 'customer:4411/phone',
      statement: 'phone is 555-0111',
      value: '555-0111',
    });
    expect(raised.__typename).toBe('ContradictionRaised');
    const cid = raised.contradiction.id;
    const r = await q(
      `mutation($c: ID!) { resolveContradiction(input: { contradictionId: $c, verdict: KEEP_EXISTING, rationale: "the call centre confirmed the old number" }) {
        id status verdict rationale adjudicator resolution { id } accepted { id } existing { id status } } }`,
      { c: cid },
    );
    expect(r.resolveContradiction).toEqual({
      id: cid,
      status: 'RESOLVED',
      verdict: 'KEEP_EXISTING',
      rationale: 'the call centre confirmed the old number',
      adjudicator: `agent:${me.name}`,
      resolution: null,
      accepted: null,
      existing: { id: ids.phone, status: 'ACTIVE' },
    });
    expect((await q(`{ contradictions(status: RESOLVED) { id verdict } }`)).contradictions).toEqual([
      { id: ids.c1, verdict: 'ACCEPT_PROPOSED' },
      { id: cid, verdict: 'KEEP_EXISTING' },
    ]);
    expect((await q(`{ contradictions(status: OPEN) { id } }`)).contradictions).toEqual([]);
    expect((await q(`{ contradictions { id } }`)).contradictions.length).toBe(2);
  });

  it('beliefs: newest first, paged with first/after, filtered by claimKeyPrefix and status, with totalCount', async () => {
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await asserted(`page:item-${i}`)).id);
    const PAGE = `query($p: String, $s: BeliefStatus, $f: Int, $a: String) { beliefs(claimKeyPrefix: $p, status: $s, first: $f, after: $a) {
        totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id claimKey status } } } }`;
    const seen: string[] = [];
    let after: string | null = null;
    const sizes: number[] = [];
    for (;;) {
      const page: any = (await q(PAGE, { p: 'page:', f: 3, a: after })).beliefs;
      expect(page.totalCount).toBe(7);
      sizes.push(page.edges.length);
      seen.push(...page.edges.map((e: { node: { id: string } }) => e.node.id));
      expect(page.pageInfo.endCursor).toBe(page.edges[page.edges.length - 1].cursor);
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(sizes).toEqual([3, 3, 1]);
    expect(seen).toEqual([...made].reverse());
    const retracted = (await q(PAGE, { s: 'RETRACTED', f: 500 })).beliefs;
    expect(retracted.totalCount).toBe(5);
    expect(retracted.edges.every((e: { node: { status: string } }) => e.node.status === 'RETRACTED')).toBe(true);
    expect(retracted.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(
      expect.arrayContaining([ids.passport, ids.identity, ids.refundEligible, ids.kycTier]),
    );
    const active = (await q(PAGE, { s: 'ACTIVE', p: 'customer:4411/', f: 500 })).beliefs;
    expect(
      active.edges.every(
        (e: { node: { status: string; claimKey: string } }) =>
          e.node.status === 'ACTIVE' && e.node.claimKey.startsWith('customer:4411/'),
      ),
    ).toBe(true);
    const all = (await q(PAGE, {})).beliefs;
    expect(all.totalCount).toBe(retracted.totalCount + (await q(PAGE, { s: 'ACTIVE' })).beliefs.totalCount);
    const bad = await raw(PAGE, { a: 'not-a-cursor' });
    expect(codes(bad.errors)).toEqual(['BAD_USER_INPUT']);
    expect(bad.errors![0]!.extensions!.field).toBe('after');
  });

  it('node, belief and beliefByClaim: every node type resolves by its global id; a claim with no ACTIVE belief is null', async () => {
    const NODE = `query($id: ID!) { node(id: $id) { __typename id
        ... on Agent { name } ... on Belief { claimKey } ... on Effect { kind } ... on Reversal { status }
        ... on Retraction { reason } ... on Contradiction { claimKey } } }`;
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['Agent', me.id, { name: 'refund-bot' }],
      ['Belief', ids.passport, { claimKey: 'customer:4411/passport.authentic' }],
      ['Effect', ids.refund, { kind: 'refund' }],
      ['Reversal', ids.owedReversal, { status: 'CONFIRMED' }],
      ['Retraction', ids.retraction, { reason: 'passport came back forged' }],
      ['Contradiction', ids.c1, { claimKey: 'customer:4411/email' }],
    ];
    for (const [type, id, fields] of cases) {
      expect((await q(NODE, { id })).node).toEqual({ __typename: type, id, ...fields });
      expect(dbId(id, type)).toMatch(/^\d+$/);
    }
    expect(
      (await q(`query($id: ID!) { belief(id: $id) { id status retraction { id } retractedAt } }`, { id: ids.kycTier }))
        .belief,
    ).toMatchObject({ id: ids.kycTier, status: 'RETRACTED', retraction: { id: ids.retraction } });
    expect(
      (await q(`query($k: String!) { beliefByClaim(claimKey: $k) { id } }`, { k: 'customer:4411/passport.authentic' }))
        .beliefByClaim,
    ).toBeNull();
    expect(
      (await q(`query($k: String!) { beliefByClaim(claimKey: $k) { id } }`, { k: 'customer:4411/utility.bill' }))
        .beliefByClaim,
    ).toEqual({ id: ids.utilityBill });
    // Dependents of a belief.
    const deps = (
      await q(`query($id: ID!) { belief(id: $id) { dependents { totalCount edges { node { id } } } } }`, {
        id: ids.passport,
      })
    ).belief.dependents;
    expect(deps.totalCount).toBe(3);
    expect(deps.edges.map((e: { node: { id: string } }) => e.node.id).sort()).toEqual(
      [ids.identity, ids.kycTier, ids.address].sort(),
    );
    // An id of the wrong type names nothing of that type; a malformed one is bad input.
    const wrong = await raw(`query($id: ID!) { belief(id: $id) { id } }`, { id: ids.refund });
    expect(wrong.data).toEqual({ belief: null });
    expect(codes(wrong.errors)).toEqual(['NOT_FOUND']);
    const malformed = await raw(`query($id: ID!) { belief(id: $id) { id } }`, { id: 'garbage!' });
    expect(codes(malformed.errors)).toEqual(['BAD_USER_INPUT']);
  });
});
