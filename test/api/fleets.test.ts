import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { gid, type NodeType } from '../../src/kernel/ids';
import { SCOPES } from '../../src/agent/scopes';
import { belief } from '../support/story';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { type Fixture, fleetFixture } from '../support/api-fixture';
import {
  codes,
  gql,
  ok,
  RETRACTION_EVENTS,
  streamed,
  subscribeSse,
  subscribeWs,
  type Collector,
  type StreamedEvent,
} from '../support/api-client';
import { OPERATIONS, type Operation } from '../support/api-operations';
import { type ApiServer, agentWith, startApiServer, tableDigests, type TestAgent } from '../support/api-server';
import { registerEffectKind } from '../../src/effect/effect.service';

type Sub = Collector<{ retractionEvents: StreamedEvent }> & { close(): Promise<void> };

/**
 * Fleet isolation through the API: an agent of fleet globex, holding every scope, aims every
 * id-taking operation at acme's global ids and gets NOT_FOUND with nothing written and no event
 * delivered; its lists never show an acme row; its subscriber never sees acme's retractions.
 */
describe.each(engines())('fleet isolation over the API on %s', (engine) => {
  let s: ApiServer;
  let A: Fixture;
  let B: Fixture;
  let a: TestAgent;
  let b: TestAgent;
  let subA: Sub;
  let subB: Sub;
  const probes: Record<string, string> = {};

  const retract = async (agent: TestAgent, beliefGid: string, reason: string) =>
    ok(
      await gql(
        s.http,
        'mutation($b: ID!, $r: String!) { retractBelief(input: { beliefId: $b, reason: $r }) { id } }',
        { b: beliefGid, r: reason },
        agent.token,
      ),
    ).retractBelief.id as string;

  beforeAll(async () => {
    s = await startApiServer(engine);
    const actorA = await actorIn(s.db.store, 'acme', 'a');
    const actorB = await actorIn(s.db.store, 'globex', 'b');
    A = await fleetFixture(s.core, actorA, 'acme-fx');
    B = await fleetFixture(s.core, actorB, 'globex-fx');
    await registerEffectKind(s.core, actorA, { kind: 'acme_only', reversible: true });
    a = await agentWith(s.db.store, 'acme', SCOPES, 'acme-admin');
    b = await agentWith(s.db.store, 'globex', SCOPES, 'globex-admin');
    // One subscriber per fleet (graphql-ws for acme, SSE for globex), made live by a probe retraction each.
    subA = subscribeWs(s.ws, RETRACTION_EVENTS, {}, a.token) as Sub;
    subB = subscribeSse(s.http, RETRACTION_EVENTS, {}, b.token) as unknown as Sub;
    await new Promise((r) => setTimeout(r, 300));
    for (const [agent, actor, sub, tag] of [
      [a, actorA, subA, 'acme'],
      [b, actorB, subB, 'globex'],
    ] as const) {
      for (let attempt = 0; ; attempt++) {
        const probe = await belief(s.core, actor, `${tag}/probe-${attempt}`);
        const rid = await retract(agent, gid('Belief', probe.id), 'probe');
        try {
          await sub.until(
            (c) => streamed(c).some((e) => e.__typename === 'RetractionCommitted' && e.retraction.id === rid),
            3_000,
            `${tag} probe`,
          );
          probes[tag] = rid;
          break;
        } catch (e) {
          if (attempt > 3) throw e;
        }
      }
    }
  });
  afterAll(async () => {
    await subA?.close();
    await subB?.close();
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  const idOps = OPERATIONS.filter((o) => o.ids.length > 0);

  it('the operations taking ids are the ones the table says', () => {
    expect(idOps.map((o) => o.field).sort()).toEqual([
      'addJustification',
      'adjudicateContradiction',
      'assertBelief',
      'belief',
      'completeEffect',
      'confirmReversal',
      'failEffect',
      'node',
      'previewRetraction',
      'proposeEffect',
      'reinstateRetraction',
      'reinstatement',
      'resolveContradiction',
      'restoreEffect',
      'retractBelief',
      'retraction',
    ]);
  });

  async function refused(o: Operation, variables: Record<string, unknown>) {
    const before = await tableDigests(s.db.store);
    const r = await gql(s.http, o.document, variables, b.token);
    expect({ field: o.field, codes: codes(r.errors) }).toEqual({ field: o.field, codes: ['NOT_FOUND'] });
    expect(r.errors![0]!.message).not.toMatch(/acme/);
    if (o.nullable) expect(r.data).toEqual({ [o.field]: null });
    else expect(r.data).toBeNull();
    expect(await tableDigests(s.db.store)).toEqual(before);
  }

  it.each(idOps.map((o) => [o.field, o] as const))(
    "%s with acme's ids, from a globex agent: NOT_FOUND and nothing written",
    async (_n, o) => {
      await refused(o, o.variables(A));
    },
  );

  it("mixed ids (globex's own belief, acme's premise or support) are NOT_FOUND too", async () => {
    const add = OPERATIONS.find((o) => o.field === 'addJustification')!;
    await refused(add, { b: B.d, p: [A.e] });
    await refused(add, { b: A.d, p: [B.e] });
    const assert = OPERATIONS.find((o) => o.field === 'assertBelief')!;
    await refused(assert, { k: 'globex-fx/mixed', from: [B.p, A.p] });
    const propose = OPERATIONS.find((o) => o.field === 'proposeEffect')!;
    await refused(propose, { s: [B.d, A.d], k: 'globex-fx:mixed' });
  });

  it('node: every node type of acme is NOT_FOUND for globex, and found for acme', async () => {
    const node = OPERATIONS.find((o) => o.field === 'node')!;
    const cases: Array<[NodeType, string]> = [
      ['Agent', A.agent],
      ['Belief', A.p],
      ['Effect', A.pending],
      ['Reversal', A.reversal],
      ['Retraction', A.retraction],
      ['Contradiction', A.c1],
    ];
    for (const [type, id] of cases) {
      await refused(node, { id });
      expect(ok(await gql(s.http, node.document, { id }, a.token)).node).toEqual({ id, __typename: type });
    }
  });

  it("globex's lists and look-ups never show an acme row", async () => {
    const acmeIds = new Set<string>();
    const globexCount: Record<string, number> = {};
    await s.db.store.db.transaction().execute(async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      for (const [table, type] of [
        ['beliefs', 'Belief'],
        ['effects', 'Effect'],
        ['reversals', 'Reversal'],
        ['retractions', 'Retraction'],
        ['contradictions', 'Contradiction'],
        ['agents', 'Agent'],
      ] as const) {
        const rows = await sql<{
          id: string;
          fleet_id: string;
        }>`SELECT id::text, fleet_id FROM ${sql.table(table)}`.execute(tx);
        for (const r of rows.rows) if (r.fleet_id === 'acme') acmeIds.add(gid(type, r.id));
        globexCount[table] = rows.rows.filter((r) => r.fleet_id === 'globex').length;
      }
    });
    expect(acmeIds.size).toBeGreaterThan(15);
    const q = async (query: string, variables = {}) => ok(await gql(s.http, query, variables, b.token));
    const pageIds = (c: { edges: Array<{ node: { id: string } }> }) => c.edges.map((e) => e.node.id);
    const lists = {
      ...(await q(`{ beliefs(first: 500) { totalCount edges { node { id author { id } } } } }`)),
      ...(await q(`{ retractions(first: 500) { totalCount edges { node { id root { id } } } } }`)),
      ...(await q(`{ effects(first: 500) { totalCount edges { node { id supportedBy { id } } } } }`)),
      ...(await q(`{ reversals(first: 500) { totalCount edges { node { id effect { id } } } } }`)),
      ...(await q(`{ contradictions { id existing { id } } effectKinds { kind } }`)),
    };
    const seen = [
      ...pageIds(lists.beliefs),
      ...lists.beliefs.edges.map((e: any) => e.node.author.id),
      ...pageIds(lists.retractions),
      ...lists.retractions.edges.map((e: any) => e.node.root.id),
      ...pageIds(lists.effects),
      ...lists.effects.edges.flatMap((e: any) => e.node.supportedBy.map((x: { id: string }) => x.id)),
      ...pageIds(lists.reversals),
      ...lists.reversals.edges.map((e: any) => e.node.effect.id),
      ...lists.contradictions.flatMap((c: any) => [c.id, c.existing.id]),
    ];
    expect(seen.length).toBeGreaterThan(15);
    expect(seen.filter((id) => acmeIds.has(id))).toEqual([]);
    expect(lists.beliefs.totalCount).toBe(globexCount.beliefs);
    expect(lists.retractions.totalCount).toBe(globexCount.retractions);
    expect(lists.effects.totalCount).toBe(globexCount.effects);
    expect(lists.reversals.totalCount).toBe(globexCount.reversals);
    expect(lists.contradictions.length).toBe(globexCount.contradictions);
    expect(lists.effectKinds.map((k: { kind: string }) => k.kind)).not.toContain('acme_only');
    // READ over every belief, retracted ones included, finds none of acme's.
    const hits = (
      await q(
        `query($t: String!) { search(input: { text: $t, k: 100, includeRetracted: true }) { hits { belief { id claimKey } } } }`,
        { t: 'acme-fx/p holds' },
      )
    ).search.hits;
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.filter((h: { belief: { id: string } }) => acmeIds.has(h.belief.id))).toEqual([]);
    expect(
      (await q(`query($k: String!) { beliefByClaim(claimKey: $k) { id } }`, { k: A.keys.p })).beliefByClaim,
    ).toBeNull();
    // And acme's own view of the same claim is there (the key is real).
    expect(
      ok(await gql(s.http, `query($k: String!) { beliefByClaim(claimKey: $k) { id } }`, { k: A.keys.p }, a.token))
        .beliefByClaim,
    ).toEqual({ id: A.p });
    // The viewer is globex's own agent.
    expect((await q('{ viewer { fleet } }')).viewer.fleet).toBe('globex');
  });

  it("subscribers see only their own fleet's retractions: nothing from the refused calls, none of acme's for globex", async () => {
    const ridA = await retract(a, A.p, 'acme retracts its own premise');
    await subA.until(
      (c) => streamed(c).some((e) => e.__typename === 'RetractionCommitted' && e.retraction.id === ridA),
      10_000,
      'acme retraction',
    );
    // globex retracts after acme; its stream is in commit order, so acme's events would come first.
    const ridB = await retract(b, B.p, 'globex retracts its own premise');
    await subB.until(
      (c) => streamed(c).some((e) => e.__typename === 'RetractionCommitted' && e.retraction.id === ridB),
      10_000,
      'globex retraction',
    );
    const retractionsOf = (c: Sub) => [...new Set(streamed(c).map((e) => e.retraction.id))];
    expect(retractionsOf(subA)).toEqual([probes.acme, ridA]);
    expect(retractionsOf(subB)).toEqual([probes.globex, ridB]);
    // Everything globex saw is globex's.
    for (const e of streamed(subB)) {
      for (const id of [e.belief?.id, e.effect?.id, e.reversal?.id, e.retraction.root.id].filter(Boolean)) {
        expect(ok(await gql(s.http, 'query($id: ID!) { node(id: $id) { id } }', { id }, b.token)).node).toEqual({ id });
      }
    }
    expect(subA.errors).toEqual([]);
    expect(subB.errors).toEqual([]);
    // acme's retraction of p took d down and cancelled the pending refund: all in acme's stream.
    const ofA = streamed(subA).filter((e) => e.retraction.id === ridA);
    expect(
      ofA
        .filter((e) => e.__typename === 'BeliefRetracted')
        .map((e) => e.belief!.id)
        .sort(),
    ).toEqual([A.p, A.d].sort());
    expect(ofA.filter((e) => e.__typename === 'EffectCancelled').map((e) => e.effect!.id)).toEqual([A.pending]);
  });
});
