import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gid } from '../../src/kernel/ids';
import { assertBelief } from '../../src/belief/belief.service';
import { resolveContradiction } from '../../src/adjudication/adjudication.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import { confirmReversal } from '../../src/reversal/reversal.service';
import { readTx } from '../../src/store/tx';
import { actorIn, expectInvariants, engines } from '../support/engines';
import { executed, passportStory, proposed } from '../support/story';
import { codes, gql, ok } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';

/** A known instant between two phases: every change before it is dated earlier, every change after it later (same clock). */
async function instant(): Promise<Date> {
  await new Promise((r) => setTimeout(r, 5));
  const t = new Date();
  await new Promise((r) => setTimeout(r, 5));
  return t;
}

const BY_CLAIM = `query($k: String!, $at: DateTime) { beliefByClaim(claimKey: $k, asOf: $at) { id status asOf statement retraction { id } } }`;
const PAGE = `query($at: DateTime, $s: BeliefStatus) { beliefs(claimKeyPrefix: "customer:4411/", asOf: $at, status: $s, first: 50) {
  totalCount edges { node { claimKey status asOf retractionDepth retraction { id } } } } }`;
const SEARCH = `query($at: DateTime, $r: Boolean) { search(input: { text: "The passport of customer 4411 is authentic", k: 10, asOf: $at, includeRetracted: $r }) {
  hits { score belief { claimKey status asOf } } } }`;

describe.each(engines())('as-of reads on %s', (engine) => {
  let s: ApiServer;
  let reader: string;
  let receipts: string;
  const at: Record<string, Date> = {};
  let story: Awaited<ReturnType<typeof passportStory>>;
  let retraction: string;
  let fresh: string;
  let newRefund: string;
  let onActive: string;

  beforeAll(async () => {
    s = await startApiServer(engine);
    const core = { store: s.db.store, embedder: s.core.embedder };
    const actor = await actorIn(s.db.store, 'acme');
    reader = (await agentWith(s.db.store, 'acme', ['beliefs:read', 'receipts:read'], 'reader')).token;
    receipts = (await agentWith(s.db.store, 'acme', ['receipts:read'], 'auditor')).token;
    at.empty = await instant();
    story = await passportStory(core, actor);
    at.story = await instant();
    retraction = (
      await retractBelief(core, actor, { beliefId: story.passport.id, reason: 'passport came back forged' })
    ).retractionId;
    at.retracted = await instant();
    const r = await assertBelief(core, actor, {
      claimKey: 'customer:4411/passport.authentic',
      statement: 'The passport of customer 4411 is forged',
      value: false,
      evidence: 'lab report',
    });
    if (r.kind !== 'asserted') throw new Error(r.kind);
    fresh = r.belief.id;
    newRefund = (
      await executed(
        core,
        actor,
        await proposed(core, actor, 'refund', [r.belief], 'customer:4411:refund-2', 5_000),
        'bank-ref-2',
      )
    ).id;
    at.reasserted = await instant();
    // Adjudication acceptance: the contradiction's proposal replaces the ACTIVE belief.
    const c = await assertBelief(core, actor, {
      claimKey: 'customer:4411/passport.authentic',
      statement: 'The passport of customer 4411 is a copy',
      value: 'copy',
      evidence: 'registry',
    });
    if (c.kind !== 'contradiction') throw new Error(c.kind);
    await resolveContradiction(core, actor, 'judge', {
      contradictionId: c.contradictionId,
      verdict: 'ACCEPT_PROPOSED',
      rationale: 'the registry is authoritative',
    });
    at.accepted = await instant();
    const acc = await assertBelief(core, actor, {
      claimKey: 'customer:4411/passport.authentic',
      statement: 'The passport of customer 4411 is a copy',
      value: 'copy',
    });
    if (acc.kind !== 'corroborated') throw new Error(acc.kind);
    onActive = (
      await executed(
        core,
        actor,
        await proposed(core, actor, 'refund', [acc.belief], 'customer:4411:refund-3', 700),
        'bank-ref-3',
      )
    ).id;
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it("beliefByClaim reads back the claim's ACTIVE belief at each known instant, and the current one without asOf", async () => {
    const key = 'customer:4411/passport.authentic';
    const read = async (t: Date | null) =>
      ok(await gql(s.http, BY_CLAIM, { k: key, at: t?.toISOString() ?? null }, reader)).beliefByClaim;
    expect(await read(at.empty!)).toBeNull();
    expect(await read(at.story!)).toMatchObject({
      id: gid('Belief', story.passport.id),
      status: 'ACTIVE',
      asOf: at.story!.toISOString(),
      retraction: null,
    });
    expect(await read(at.retracted!)).toBeNull();
    expect(await read(at.reasserted!)).toMatchObject({
      id: gid('Belief', fresh),
      status: 'ACTIVE',
      statement: 'The passport of customer 4411 is forged',
    });
    const accepted = await read(at.accepted!);
    expect(accepted).toMatchObject({ status: 'ACTIVE', statement: 'The passport of customer 4411 is a copy' });
    expect(await read(null)).toMatchObject({ id: accepted.id, status: 'ACTIVE', asOf: null });
    // The belief the adjudication replaced reads back ACTIVE just before it, RETRACTED after.
    const hist = ok(
      await gql(
        s.http,
        `query($id: ID!) { node(id: $id) { ... on Belief { status statusHistory { status from to retraction { id } changedBy { id } } } } }`,
        { id: gid('Belief', fresh) },
        reader,
      ),
    ).node;
    expect(hist.status).toBe('RETRACTED');
    expect(hist.statusHistory.map((i: any) => i.status)).toEqual(['ACTIVE', 'RETRACTED']);
    expect(new Date(hist.statusHistory[0].to).getTime()).toBeGreaterThan(at.reasserted!.getTime());
    expect(new Date(hist.statusHistory[0].to).getTime()).toBeLessThan(at.accepted!.getTime());
  });

  it('beliefs(asOf) lists the fleet as it stood: nothing, four ACTIVE, the same four RETRACTED by the retraction, then the reasserted claim', async () => {
    const page = async (t: Date, st: string | null = null) =>
      ok(await gql(s.http, PAGE, { at: t.toISOString(), s: st }, reader)).beliefs;
    expect((await page(at.empty!)).totalCount).toBe(0);
    const before = await page(at.story!);
    expect(before.totalCount).toBe(4);
    expect(
      before.edges.every(
        (e: any) => e.node.status === 'ACTIVE' && e.node.retraction === null && e.node.asOf === at.story!.toISOString(),
      ),
    ).toBe(true);
    const after = await page(at.retracted!);
    expect(after.totalCount).toBe(4);
    expect(
      after.edges.every(
        (e: any) => e.node.status === 'RETRACTED' && e.node.retraction.id === gid('Retraction', retraction),
      ),
    ).toBe(true);
    expect(after.edges.map((e: any) => e.node.retractionDepth).sort()).toEqual([0, 1, 1, 2]);
    expect((await page(at.retracted!, 'ACTIVE')).totalCount).toBe(0);
    expect((await page(at.reasserted!, 'ACTIVE')).edges.map((e: any) => e.node.claimKey)).toEqual([
      'customer:4411/passport.authentic',
    ]);
    expect((await page(at.reasserted!, 'RETRACTED')).totalCount).toBe(4);
    expect((await page(at.accepted!, 'RETRACTED')).totalCount).toBe(5);
  });

  it('search(asOf) ranks the beliefs ACTIVE at that instant exactly (all of them, with includeRetracted those that existed)', async () => {
    const hits = async (t: Date, r = false) =>
      ok(await gql(s.http, SEARCH, { at: t.toISOString(), r }, reader)).search.hits;
    expect(await hits(at.empty!, true)).toEqual([]);
    const h1 = await hits(at.story!);
    expect(h1.map((h: any) => h.belief.claimKey).sort()).toEqual([
      'customer:4411/identity.verified',
      'customer:4411/kyc.tier',
      'customer:4411/passport.authentic',
      'customer:4411/refund.eligible',
    ]);
    expect(h1[0].belief).toMatchObject({
      claimKey: 'customer:4411/passport.authentic',
      status: 'ACTIVE',
      asOf: at.story!.toISOString(),
    });
    expect(await hits(at.retracted!)).toEqual([]);
    const h2 = await hits(at.retracted!, true);
    expect(h2.length).toBe(4);
    expect(h2.every((h: any) => h.belief.status === 'RETRACTED')).toBe(true);
    expect((await hits(at.reasserted!)).map((h: any) => [h.belief.claimKey, h.belief.status])).toEqual([
      ['customer:4411/passport.authentic', 'ACTIVE'],
    ]);
    // Scores are the same ranking as today's search over the same rows.
    const now = ok(
      await gql(
        s.http,
        `{ search(input: { text: "The passport of customer 4411 is authentic", k: 10, includeRetracted: true }) { hits { score belief { id } } } }`,
        {},
        reader,
      ),
    ).search.hits;
    const nowScore = new Map(now.map((h: any) => [h.belief.id, h.score]));
    const past = ok(
      await gql(
        s.http,
        `query($at: DateTime) { search(input: { text: "The passport of customer 4411 is authentic", k: 10, includeRetracted: true, asOf: $at }) { hits { score belief { id } } } }`,
        { at: at.retracted!.toISOString() },
        reader,
      ),
    ).search.hits;
    for (const h of past) expect(h.score).toBeCloseTo(nowScore.get(h.belief.id) as number, 6);
  });

  it('Effect.supportAtExecution: what the fleet believed when the refund ran (ACTIVE then, RETRACTED now), by the Belief rule', async () => {
    const Q = `{ effects(first: 50) { edges { node { id executedAt supportAtExecution { claimKey status asOf } } } } }`;
    const effect = async (id: string) => {
      const r = await gql(s.http, Q, {}, receipts);
      return { errors: r.errors, node: r.data.effects.edges.find((e: any) => e.node.id === gid('Effect', id)).node };
    };
    const refund = (await effect(story.refund.id)).node;
    const now = ok(
      await gql(
        s.http,
        `query($id: ID!) { node(id: $id) { ... on Effect { supportedBy { status } } } }`,
        { id: gid('Effect', story.refund.id) },
        reader,
      ),
    ).node;
    expect(now.supportedBy).toEqual([{ status: 'RETRACTED' }]);
    expect(refund.supportAtExecution).toEqual([
      { claimKey: 'customer:4411/refund.eligible', status: 'ACTIVE', asOf: refund.executedAt },
    ]);
    // The pending payout never executed: nothing to read.
    expect((await effect(story.pending.id)).node.supportAtExecution).toEqual([]);
    // The second refund rests on a belief the adjudication retracted: receipts:read opens it, as Belief does.
    const second = (await effect(newRefund)).node;
    expect(second.supportAtExecution).toEqual([
      { claimKey: 'customer:4411/passport.authentic', status: 'ACTIVE', asOf: second.executedAt },
    ]);
  });

  it('a belief ACTIVE now stays closed to receipts:read when reached through supportAtExecution; the effect itself answers', async () => {
    const Q = `{ effects(first: 1) { edges { node { id kind supportAtExecution { status } } } } }`;
    const r = await gql(s.http, Q, {}, receipts);
    expect(r.data.effects.edges[0].node).toMatchObject({ id: gid('Effect', onActive), kind: 'refund' });
    expect(codes(r.errors)).toEqual(['FORBIDDEN']);
    expect(r.errors![0]!.path).toEqual(['effects', 'edges', 0, 'node', 'supportAtExecution', 0]);
    expect(ok(await gql(s.http, Q, {}, reader)).effects.edges[0].node.supportAtExecution).toEqual([
      { status: 'ACTIVE' },
    ]);
    const accepted = ok(
      await gql(s.http, BY_CLAIM, { k: 'customer:4411/passport.authentic', at: null }, reader),
    ).beliefByClaim;
    const q = await gql(
      s.http,
      `query($id: ID!) { node(id: $id) { ... on Belief { statusHistory { status } } } }`,
      { id: accepted.id },
      receipts,
    );
    expect(codes(q.errors)).toEqual(['FORBIDDEN']);
  });

  it('Retraction.before: the blast radius as it stood the instant before the retraction, in cascade order', async () => {
    const Q = `query($id: ID!) { retraction(id: $id) { createdAt before(first: 2) { totalCount pageInfo { hasNextPage endCursor } edges { node { claimKey status asOf retraction { id } } } } } }`;
    const r = ok(await gql(s.http, Q, { id: gid('Retraction', retraction) }, reader)).retraction;
    expect(r.before.totalCount).toBe(4);
    expect(r.before.edges.map((e: any) => e.node.claimKey)).toEqual([
      'customer:4411/passport.authentic',
      'customer:4411/identity.verified',
    ]);
    expect(r.before.edges.every((e: any) => e.node.status === 'ACTIVE' && e.node.retraction === null)).toBe(true);
    expect(new Date(r.before.edges[0].node.asOf).getTime()).toBeLessThanOrEqual(new Date(r.createdAt).getTime());
    const rest = ok(
      await gql(
        s.http,
        `query($id: ID!, $a: String) { retraction(id: $id) { before(first: 10, after: $a) { pageInfo { hasNextPage } edges { node { claimKey } } } } }`,
        { id: gid('Retraction', retraction), a: r.before.pageInfo.endCursor },
        reader,
      ),
    ).retraction.before;
    expect(rest.edges.map((e: any) => e.node.claimKey)).toEqual([
      'customer:4411/kyc.tier',
      'customer:4411/refund.eligible',
    ]);
    expect(rest.pageInfo.hasNextPage).toBe(false);
  });

  it("beliefs(ids:, asOf:) reads given beliefs as of an instant (the dashboard's time slider); an id of another type is refused naming ids[0]", async () => {
    const Q = `query($ids: [ID!], $at: DateTime) { beliefs(ids: $ids, asOf: $at, first: 10) { totalCount edges { node { id status } } } }`;
    const ids = [gid('Belief', story.passport.id), gid('Belief', fresh)];
    const then = ok(await gql(s.http, Q, { ids, at: at.story!.toISOString() }, reader)).beliefs;
    expect(then.edges).toEqual([{ node: { id: ids[0], status: 'ACTIVE' } }]);
    const later = ok(await gql(s.http, Q, { ids, at: at.reasserted!.toISOString() }, reader)).beliefs;
    expect(later.edges).toEqual([
      { node: { id: ids[1], status: 'ACTIVE' } },
      { node: { id: ids[0], status: 'RETRACTED' } },
    ]);
    expect(ok(await gql(s.http, Q, { ids, at: null }, reader)).beliefs.edges.map((e: any) => e.node.status)).toEqual([
      'RETRACTED',
      'RETRACTED',
    ]);
    const bad = await gql(s.http, Q, { ids: [gid('Effect', newRefund)], at: null }, reader);
    // As every id argument answers an id of another type: it names no belief.
    expect(codes(bad.errors)).toEqual(['NOT_FOUND']);
    expect(bad.errors![0]!.message).toMatch(/ids\[0\]/);
  });

  it("openMoney sums the fleet's OWED and DISPATCHED reversals per currency, as the reversals themselves add up", async () => {
    const money = ok(
      await gql(
        s.http,
        `{ openMoney { owedCount owed { amountMinor currency } inFlightCount inFlight { amountMinor } } }`,
        {},
        receipts,
      ),
    ).openMoney;
    const owed = ok(
      await gql(
        s.http,
        `{ reversals(status: OWED, first: 100) { totalCount edges { node { amount { amountMinor currency } } } } }`,
        {},
        receipts,
      ),
    ).reversals;
    expect(money.owedCount).toBe(owed.totalCount);
    expect(money.owed).toEqual([
      { amountMinor: owed.edges.reduce((n: number, e: any) => n + e.node.amount.amountMinor, 0), currency: 'USD' },
    ]);
    expect(money.owed[0].amountMinor).toBe(124_000 + 5_000);
    expect(money).toMatchObject({ inFlightCount: 0, inFlight: [] });
    const refused = await gql(
      s.http,
      `{ openMoney { owedCount } }`,
      {},
      (await agentWith(s.db.store, 'acme', ['beliefs:read'], 'no-receipts')).token,
    );
    expect(codes(refused.errors)).toEqual(['FORBIDDEN']);
  });

  it('a bad asOf is refused naming the argument, with BAD_USER_INPUT', async () => {
    const r = await gql(s.http, BY_CLAIM, { k: 'customer:4411/passport.authentic', at: 'yesterday' }, reader);
    expect(codes(r.errors)).toEqual(['BAD_USER_INPUT']);
    expect(r.errors![0]!.message).toMatch(/\$at|DateTime/);
  });
});

describe.each(engines())('as-of reads across a reinstatement on %s', (engine) => {
  let s: ApiServer;
  let reader: string;
  const at: Record<string, Date> = {};
  let story: Awaited<ReturnType<typeof passportStory>>;
  let first: string;
  let second: string;
  let reinstatementId: string;

  beforeAll(async () => {
    s = await startApiServer(engine);
    const core = { store: s.db.store, embedder: s.core.embedder };
    const actor = await actorIn(s.db.store, 'acme');
    reader = (await agentWith(s.db.store, 'acme', ['beliefs:read', 'receipts:read'], 'reader')).token;
    story = await passportStory(core, actor);
    at.story = await instant();
    first = (await retractBelief(core, actor, { beliefId: story.passport.id, reason: 'passport came back forged' }))
      .retractionId;
    at.retracted = await instant();
    // The refund's money came back before the retraction was taken back: the reinstatement owes its re-execution.
    const owed = await readTx(s.db.store, 'acme', (tx) =>
      tx.selectFrom('reversals').select('id').where('effect_id', '=', story.refund.id).executeTakeFirstOrThrow(),
    );
    await confirmReversal(core, actor, { reversalId: owed.id, providerRef: 'prv_refund_back_1' });
    const r = await reinstateRetraction(core, actor, {
      retractionId: first,
      reason: 'the lab was wrong: the passport is genuine',
    });
    if (r.kind !== 'reinstated') throw new Error(r.kind);
    reinstatementId = r.reinstatementId;
    at.reinstated = await instant();
    second = (await retractBelief(core, actor, { beliefId: story.passport.id, reason: 'forged after all' }))
      .retractionId;
    at.again = await instant();
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  const radius = () => [story.passport, ...story.derived].map((b) => gid('Belief', b.id)).sort();

  it('each instant reads back exactly: ACTIVE, RETRACTED by the first retraction, ACTIVE again after the reinstatement, RETRACTED by the second', async () => {
    const Q = `query($at: DateTime) { beliefs(claimKeyPrefix: "customer:4411/", asOf: $at, first: 50) { totalCount edges { node { id status retraction { id } retractionDepth } } } }`;
    const read = async (t: Date) =>
      ok(await gql(s.http, Q, { at: t.toISOString() }, reader)).beliefs.edges.map((e: any) => e.node);
    const expectAll = (nodes: any[], status: string, retraction: string | null) => {
      expect(nodes.map((n) => n.id).sort()).toEqual(radius());
      for (const n of nodes)
        expect({ status: n.status, retraction: n.retraction?.id ?? null }).toEqual({
          status,
          retraction: retraction && gid('Retraction', retraction),
        });
    };
    expectAll(await read(at.story!), 'ACTIVE', null);
    const down = await read(at.retracted!);
    expectAll(down, 'RETRACTED', first);
    expect(down.map((n: any) => n.retractionDepth).sort()).toEqual([0, 1, 1, 2]);
    expectAll(await read(at.reinstated!), 'ACTIVE', null);
    expectAll(await read(at.again!), 'RETRACTED', second);
    const byClaim = async (t: Date) =>
      ok(await gql(s.http, BY_CLAIM, { k: 'customer:4411/passport.authentic', at: t.toISOString() }, reader))
        .beliefByClaim;
    expect(await byClaim(at.retracted!)).toBeNull();
    expect(await byClaim(at.reinstated!)).toMatchObject({ id: gid('Belief', story.passport.id), status: 'ACTIVE' });
  });

  it('search as of each instant finds the blast radius only while it was ACTIVE', async () => {
    const hits = async (t: Date) =>
      ok(await gql(s.http, SEARCH, { at: t.toISOString(), r: false }, reader))
        .search.hits.map((h: any) => h.belief.claimKey)
        .sort();
    const keys = [
      'customer:4411/identity.verified',
      'customer:4411/kyc.tier',
      'customer:4411/passport.authentic',
      'customer:4411/refund.eligible',
    ];
    expect(await hits(at.story!)).toEqual(keys);
    expect(await hits(at.retracted!)).toEqual([]);
    expect(await hits(at.reinstated!)).toEqual(keys);
    expect(await hits(at.again!)).toEqual([]);
  });

  it('openMoney names the $1,240.00 re-execution the reinstatement owes, beside nothing owed or in flight', async () => {
    const m = ok(
      await gql(
        s.http,
        `{ openMoney { owedCount owed { amountMinor } inFlightCount reexecutionOwedCount reexecutionOwed { amountMinor currency } } }`,
        {},
        reader,
      ),
    ).openMoney;
    expect(m).toEqual({
      owedCount: 0,
      owed: [],
      inFlightCount: 0,
      reexecutionOwedCount: 1,
      reexecutionOwed: [{ amountMinor: 124_000, currency: 'USD' }],
    });
  });

  it('statusHistory names who changed it and by which retraction or reinstatement; Retraction.before still reads the first blast radius', async () => {
    const Q = `query($id: ID!) { node(id: $id) { ... on Belief { statusHistory { status from to retraction { id } reinstatementId } } } }`;
    const h = ok(await gql(s.http, Q, { id: gid('Belief', story.derived[0]!.id) }, reader)).node.statusHistory;
    expect(h.map((i: any) => [i.status, i.retraction?.id ?? null, i.reinstatementId])).toEqual([
      ['ACTIVE', gid('Retraction', first), null],
      ['RETRACTED', gid('Retraction', first), reinstatementId],
      ['ACTIVE', gid('Retraction', second), reinstatementId],
      ['RETRACTED', gid('Retraction', second), null],
    ]);
    for (let i = 1; i < h.length; i++) expect(h[i].from).toBe(h[i - 1].to);
    expect(h[3].to).toBeNull();
    const before = ok(
      await gql(
        s.http,
        `query($id: ID!) { retraction(id: $id) { before(first: 10) { totalCount edges { node { id status } } } } }`,
        { id: gid('Retraction', first) },
        reader,
      ),
    ).retraction.before;
    expect(before.totalCount).toBe(4);
    expect(before.edges.map((e: any) => e.node.id).sort()).toEqual(radius());
    expect(before.edges.every((e: any) => e.node.status === 'ACTIVE')).toBe(true);
  });
});
