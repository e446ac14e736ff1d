import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerEffectKind } from '../../../src/effect/effect.service';
import { reinstateRetraction } from '../../../src/reinstatement/reinstatement.service';
import { retractBelief } from '../../../src/retraction/retraction.service';
import { takeOwedReversals } from '../../../src/reversal/dispatch.service';
import { confirmReversal } from '../../../src/reversal/reversal.service';
import { readTx } from '../../../src/store/tx';
import { type ApiServer, startApiServer } from '../../support/api-server';
import { actorIn, engines, expectInvariants } from '../../support/engines';
import { samples, scrape } from '../../support/metrics';
import { belief, passportStory, proposed } from '../../support/story';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The statuses and backlogs of src/server/metrics/open-money.ts the passport story alone leaves at zero: money in
 * flight (DISPATCHED), re-execution owed (a reinstatement after a confirmed reversal), the dispatcher's lag (the
 * oldest OWED reversal's age, growing while nothing sends it) and the executor's (the oldest PENDING effect's), with
 * the reinstatement's own counters. Per fleet (RETRACT_METRICS_FLEET_LABEL on), so the fleets of this file do not sum.
 */
describe.each(engines())('open money, lags and reinstatements in GET /metrics on %s', (engine) => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer(engine, { metrics: { fleetLabel: true } });
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });
  const metrics = async () => samples((await scrape(s.base)).text);

  it("the dispatcher's lag grows while a reversal stays OWED; a take moves its money to in_flight and the lag to 0", async () => {
    const actor = await actorIn(s.store, 'metrics-dispatch');
    const story = await passportStory(s.core, actor);
    await retractBelief(s.core, actor, { beliefId: story.passport.id, reason: 'forged' });
    const owed = `{fleet="${actor.fleet}",status="owed",currency="USD"}`;
    const inFlight = `{fleet="${actor.fleet}",status="in_flight",currency="USD"}`;
    const age = `retract_oldest_owed_reversal_age_seconds{fleet="${actor.fleet}"}`;
    await sleep(1_100);
    let m = await metrics();
    expect(m.get(`retract_open_money_minor_units${owed}`)).toBe(124_000);
    expect(m.get(age)).toBeGreaterThanOrEqual(1);
    expect(m.has(`retract_open_money_minor_units${inFlight}`)).toBe(false);

    const taken = await takeOwedReversals(s.core, actor.fleet, { limit: 10, leaseMs: 60_000, holder: 'metrics-test' });
    expect(taken).toHaveLength(1);
    m = await metrics();
    expect(m.get(`retract_open_money_minor_units${inFlight}`)).toBe(124_000);
    expect(m.get(`retract_open_reversals${inFlight}`)).toBe(1);
    expect(m.has(`retract_open_money_minor_units${owed}`)).toBe(false);
    expect(m.get(age)).toBe(0);
    // The unreachable charge is untouched by a dispatch: a person settles it.
    expect(m.get(`retract_open_money_minor_units{fleet="${actor.fleet}",status="unreachable",currency="USD"}`)).toBe(
      8_900,
    );
    await expectInvariants(s.db.store);
  });

  it("the executor's lag and backlog: an effect left PENDING is counted, and its age grows", async () => {
    const actor = await actorIn(s.store, 'metrics-executor');
    await registerEffectKind(s.core, actor, { kind: 'payout', reversible: true });
    const b = await belief(s.core, actor, 'executor/ready');
    await proposed(s.core, actor, 'payout', [b], 'executor:payout-1', 5_000);
    await sleep(1_100);
    const m = await metrics();
    expect(m.get(`retract_pending_effects{fleet="${actor.fleet}"}`)).toBe(1);
    expect(m.get(`retract_oldest_pending_effect_age_seconds{fleet="${actor.fleet}"}`)).toBeGreaterThanOrEqual(1);
    // Pending money is not open money: nothing has moved yet.
    expect([...m.keys()].filter((k) => k.startsWith('retract_open_money') && k.includes(actor.fleet))).toEqual([]);
    await expectInvariants(s.db.store);
  });

  it('a reinstatement after the refund reversal was confirmed: counted with its cascade, and $1,240.00 re-execution owed', async () => {
    const actor = await actorIn(s.store, 'metrics-reinstate');
    const before = await metrics();
    const story = await passportStory(s.core, actor);
    const { retractionId } = await retractBelief(s.core, actor, { beliefId: story.passport.id, reason: 'forged' });
    const owed = await readTx(s.store, actor.fleet, (tx) =>
      tx.selectFrom('reversals').select('id').where('status', '=', 'OWED').executeTakeFirstOrThrow(),
    );
    await confirmReversal(s.core, actor, { reversalId: owed.id, providerRef: 'prv_metrics_1' });
    await reinstateRetraction(s.core, actor, { retractionId, reason: 'the passport was genuine' });
    const m = await metrics();
    const delta = (k: string) => m.get(k)! - (before.get(k) ?? 0);
    expect(delta('retract_reinstatements_total')).toBe(1);
    expect(delta('retract_reinstatement_duration_seconds_count')).toBe(1);
    expect(delta('retract_reinstatement_cascade_beliefs_sum')).toBe(4);
    expect(
      m.get(`retract_open_money_minor_units{fleet="${actor.fleet}",status="reexecution_owed",currency="USD"}`),
    ).toBe(124_000);
    expect(m.get(`retract_open_reversals{fleet="${actor.fleet}",status="reexecution_owed",currency="USD"}`)).toBe(1);
    // Confirmed, the refund is owed no more; the charge's UNREACHABLE line was voided by the reinstatement.
    expect(m.has(`retract_open_money_minor_units{fleet="${actor.fleet}",status="owed",currency="USD"}`)).toBe(false);
    expect(m.has(`retract_open_money_minor_units{fleet="${actor.fleet}",status="unreachable",currency="USD"}`)).toBe(
      false,
    );
    await expectInvariants(s.db.store);
  });
});
