import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { belief } from '../support/story';
import { addJustification } from '../../src/belief/belief.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { checkInvariants } from '../../src/invariants/check';
import type { Actor, Core } from '../../src/core';

/**
 * The checker itself: every suite relies on checkInvariants to report a broken store, so each
 * corruption below (written as the owner, past the services) must be reported under its rule, and
 * the store must check clean again once the corruption is undone.
 */
describe.each(engines())('checkInvariants catches corruption on %s', (engine) => {
  let t: TestDb;
  let core: Core;
  let actor: Actor;
  storeSuite(engine, { fleet: 'inv' }, (s) => ({ t, core, actor } = s));

  /** Runs `corrupt` as the owner with row security off, expects the rule to be reported with `row`, then runs `undo`. */
  async function caught(rule: RegExp, row: Record<string, unknown>, corrupt: string, undo: string) {
    const owner = (q: string) =>
      t.store.db.transaction().execute(async (tx) => {
        await sql`SET LOCAL row_security = off`.execute(tx);
        await sql.raw(q).execute(tx);
      });
    await expectInvariants(t.store);
    await owner(corrupt);
    try {
      const v = await checkInvariants(t.store);
      const hit = v.find((x) => rule.test(x.rule));
      expect(hit, `expected a violation of ${rule} among ${JSON.stringify(v)}`).toBeDefined();
      expect(hit!.rows).toContainEqual(expect.objectContaining(row));
    } finally {
      await owner(undo);
    }
    await expectInvariants(t.store);
  }

  it('an ACTIVE derived belief whose every justification lost a premise is reported (and one with a standing justification is not)', async () => {
    const a = await belief(core, actor, 'inv/a');
    const b = await belief(core, actor, 'inv/b');
    const d = await belief(core, actor, 'inv/d', [a]);
    await addJustification(core, actor, { beliefId: d.id, premises: [b.id] });
    // a falls, d survives on {b}: healthy.
    await retractBelief(core, actor, { beliefId: a.id, reason: 'a was wrong' });
    await expectInvariants(t.store);
    // Add the retracted a to d's standing justification {b}: {a, b} no longer holds (one premise
    // down is enough), so d is ACTIVE with no justification standing.
    const js = await sql<{
      id: string;
    }>`SELECT j.id::text FROM justifications j JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
      WHERE j.fleet_id = 'inv' AND j.belief_id = ${d.id} AND p.premise_id = ${b.id}`.execute(t.store.db);
    const jid = js.rows[0]!.id;
    await caught(
      /an ACTIVE derived belief has a justification/,
      { id: d.id },
      `INSERT INTO justification_premises (justification_id, premise_id, fleet_id) VALUES (${jid}, ${a.id}, 'inv')`,
      `DELETE FROM justification_premises WHERE justification_id = ${jid} AND premise_id = ${a.id}`,
    );
  });

  it('a retraction whose count disagrees with the beliefs carrying it is reported', async () => {
    const r = await belief(core, actor, 'inv/r');
    const { retractionId } = await retractBelief(core, actor, { beliefId: r.id, reason: 'r was wrong' });
    await caught(
      /counts exactly the beliefs that carry it/,
      { id: retractionId },
      `UPDATE retractions SET beliefs_retracted = beliefs_retracted + 1 WHERE id = ${retractionId}`,
      `UPDATE retractions SET beliefs_retracted = beliefs_retracted - 1 WHERE id = ${retractionId}`,
    );
  });

  it('a belief without its BeliefAsserted event is reported', async () => {
    const e = await belief(core, actor, 'inv/e');
    await caught(
      /every belief, effect, cancellation and reversal has its event/,
      { what: 'belief', id: e.id },
      `UPDATE events SET type = 'BeliefAssertedX' WHERE type = 'BeliefAsserted' AND ${e.id} = ANY(ids)`,
      `UPDATE events SET type = 'BeliefAsserted' WHERE type = 'BeliefAssertedX'`,
    );
  });
});
