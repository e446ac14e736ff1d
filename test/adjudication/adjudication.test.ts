import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Adjudicator, AdjudicationCase, Verdict } from '../../src/adjudication/adjudicator';
import { HeuristicAdjudicator } from '../../src/adjudication/heuristic';
import { assertBelief } from '../../src/belief/belief.service';
import {
  adjudicateContradiction,
  commitVerdict,
  resolveContradiction,
  takeLease,
} from '../../src/adjudication/adjudication.service';
import { DomainError } from '../../src/errors/domain-error';
import { actorIn, coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { asserted, belief } from '../support/story';
import { storeSuite } from '../support/helpers';

/** An adjudicator that answers after `ms` and counts its calls. */
function slow(verdict: Verdict, ms: number): Adjudicator & { calls: number } {
  return {
    id: `test:${verdict}`,
    calls: 0,
    async adjudicate(_c: AdjudicationCase) {
      this.calls++;
      await new Promise((r) => setTimeout(r, ms));
      return { verdict, rationale: `always ${verdict}` };
    },
  };
}

async function contradiction(
  core: ReturnType<typeof coreOf>,
  actor: Awaited<ReturnType<typeof actorIn>>,
  key: string,
  existingEvidence: string,
  proposedEvidence: string,
) {
  const existing = asserted(
    await assertBelief(core, actor, {
      claimKey: key,
      statement: `${key} is 40 kg`,
      value: 40,
      evidence: existingEvidence,
    }),
  );
  const r = await assertBelief(core, actor, {
    claimKey: key,
    statement: `${key} is 42 kg`,
    value: 42,
    evidence: proposedEvidence,
  });
  if (r.kind !== 'contradiction') throw new Error(`expected a contradiction, got ${r.kind}`);
  return { existing, id: r.contradictionId };
}

describe.each(engines())('fenced adjudication on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, {}, (s) => (t = s.t));

  it('ACCEPT_PROPOSED retracts the existing belief with its cascade and writes the proposal ACTIVE, in one transaction', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'adj');
    const { existing, id } = await contradiction(
      core,
      actor,
      'parcel:1/weight',
      'someone said so (unverified rumour)',
      'verified by the official registry scale certificate',
    );
    const dependent = await belief(core, actor, 'parcel:1/shipping.tier', [existing], 'heavy');
    const heuristic = new HeuristicAdjudicator();
    await adjudicateContradiction(core, actor, heuristic, id);
    const rows = await sql<{
      id: string;
      status: string;
      claim_key: string;
    }>`SELECT id::text, status, claim_key FROM beliefs WHERE claim_key LIKE 'parcel:1/%' ORDER BY beliefs.id`.execute(
      t.store.db,
    );
    expect(rows.rows.find((b) => b.id === existing.id)!.status).toBe('RETRACTED');
    expect(rows.rows.find((b) => b.id === dependent.id)!.status).toBe('RETRACTED');
    const c = (
      await sql<{
        status: string;
        verdict: string;
        accepted_id: string;
        resolution_id: string;
        adjudicator: string;
      }>`SELECT status, verdict, accepted_id::text, resolution_id::text, adjudicator FROM contradictions WHERE id = ${id}`.execute(
        t.store.db,
      )
    ).rows[0]!;
    expect(c).toMatchObject({ status: 'RESOLVED', verdict: 'ACCEPT_PROPOSED', adjudicator: 'heuristic' });
    const accepted = rows.rows.find((b) => b.id === c.accepted_id)!;
    expect(accepted).toMatchObject({ status: 'ACTIVE', claim_key: 'parcel:1/weight' });
    const leases = await sql<{ n: number }>`SELECT count(*)::int AS n FROM adjudication_leases`.execute(t.store.db);
    expect(leases.rows[0]!.n).toBe(0);
    await expectInvariants(t.store);
  });

  it('KEEP_EXISTING closes it; ESCALATE leaves it OPEN for resolveContradiction; a resolved one cannot be adjudicated again', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'adj');
    const a = await contradiction(core, actor, 'parcel:2/weight', 'scale', 'guess');
    await adjudicateContradiction(core, actor, slow('KEEP_EXISTING', 1), a.id);
    const b = await contradiction(core, actor, 'parcel:3/weight', 'scale', 'scale');
    await adjudicateContradiction(core, actor, slow('ESCALATE', 1), b.id);
    let rows = (
      await sql<{
        id: string;
        status: string;
        verdict: string;
      }>`SELECT id::text, status, verdict FROM contradictions WHERE id IN (${a.id}, ${b.id}) ORDER BY contradictions.id`.execute(
        t.store.db,
      )
    ).rows;
    expect(rows).toEqual([
      { id: a.id, status: 'RESOLVED', verdict: 'KEEP_EXISTING' },
      { id: b.id, status: 'OPEN', verdict: 'ESCALATE' },
    ]);
    await resolveContradiction(core, actor, 'reviewer', {
      contradictionId: b.id,
      verdict: 'ACCEPT_PROPOSED',
      rationale: 'checked the scale myself',
    });
    rows = (
      await sql<{
        id: string;
        status: string;
        verdict: string;
      }>`SELECT id::text, status, verdict FROM contradictions WHERE id = ${b.id}`.execute(t.store.db)
    ).rows;
    expect(rows[0]).toMatchObject({ status: 'RESOLVED', verdict: 'ACCEPT_PROPOSED' });
    await expect(adjudicateContradiction(core, actor, slow('KEEP_EXISTING', 1), a.id)).rejects.toMatchObject({
      code: 'CONFLICT',
    });
    await expectInvariants(t.store);
  });

  it('a verdict arriving after its lease expired is rejected, and a newer lease holder commits', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'adj');
    const c = await contradiction(core, actor, 'parcel:4/weight', 'scale', 'scale');
    const first = await takeLease(core, actor, c.id, 'first', 50);
    await new Promise((r) => setTimeout(r, 120));
    await expect(
      commitVerdict(core, actor, first.lease, { verdict: 'KEEP_EXISTING', rationale: 'late' }, 'test'),
    ).rejects.toMatchObject({ code: 'CONFLICT' });
    const second = await takeLease(core, actor, c.id, 'second', 10_000);
    expect(BigInt(second.lease.fencingToken)).toBeGreaterThan(BigInt(first.lease.fencingToken));
    await expect(
      commitVerdict(core, actor, first.lease, { verdict: 'ACCEPT_PROPOSED', rationale: 'stale' }, 'test'),
    ).rejects.toBeInstanceOf(DomainError);
    await commitVerdict(core, actor, second.lease, { verdict: 'KEEP_EXISTING', rationale: 'current' }, 'test');
    const row = (
      await sql<{
        status: string;
        rationale: string;
      }>`SELECT status, rationale FROM contradictions WHERE id = ${c.id}`.execute(t.store.db)
    ).rows[0];
    expect(row).toEqual({ status: 'RESOLVED', rationale: 'current' });
    await expectInvariants(t.store);
  });

  it.runIf(engine !== 'pglite')(
    'two adjudicators on one claim at once: one model call, one verdict, the other gets CONFLICT',
    async () => {
      const core = coreOf(t.store);
      const actor = await actorIn(t.store, 'race');
      for (let round = 0; round < 5; round++) {
        const c = await contradiction(core, actor, `race:${round}/weight`, 'scale', 'official registry');
        const model = slow('ACCEPT_PROPOSED', 150);
        const results = await Promise.allSettled([
          adjudicateContradiction(core, actor, model, c.id, { holder: 'A' }),
          adjudicateContradiction(core, actor, model, c.id, { holder: 'B' }),
        ]);
        expect(model.calls).toBe(1);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
        expect(failed.reason).toMatchObject({ code: 'CONFLICT' });
        const accepted = await sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM beliefs WHERE claim_key = ${`race:${round}/weight`} AND status = 'ACTIVE'`.execute(
          t.store.db,
        );
        expect(accepted.rows[0]!.n).toBe(1);
      }
      await expectInvariants(t.store);
    },
  );
});
