import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addJustification, assertBelief } from '../../src/belief/belief.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { openStore, type Store } from '../../src/store/engine';
import { actorIn, coreOf, engines, expectInvariants, testStore, type TestDb } from '../support/engines';
import { belief } from '../support/story';

/**
 * The lazy window of this test's store: wide, so that "at once" and "not before the window" cannot
 * be confused by a slow, loaded machine (the product's default is LAZY_NOTIFY_MS, 50 ms).
 */
const LAZY_NOTIFY_MS = 600;

/**
 * Cross-process wake-ups (PostgreSQL's NOTIFY, heard through LISTEN by a second store on the same
 * database, as a second server process would): a retraction wakes other processes at once; a turn,
 * whose events no subscription streams, wakes them within LAZY_NOTIFY_MS, and a burst of turns costs
 * a handful of NOTIFYs rather than one each. PGlite is one process: there is nothing to wake.
 */
describe.skipIf(!engines().includes('postgres'))('commit wake-ups across processes on postgres', () => {
  const engine = 'postgres';
  let t: TestDb;
  let other: Store;
  let stopListening: () => Promise<void>;
  const heard: number[] = [];
  const nextNotice = (since: number, within: number) =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const tick = setInterval(() => {
        const at = heard.find((h) => h >= since);
        if (at !== undefined) {
          clearInterval(tick);
          resolve(at - since);
        } else if (performance.now() - started > within) {
          clearInterval(tick);
          reject(new Error(`no NOTIFY heard within ${within} ms`));
        }
      }, 2);
    });

  beforeAll(async () => {
    t = await testStore(engine, { lazyNotifyMs: LAZY_NOTIFY_MS });
    other = await openStore({ databaseUrl: t.url!, migrate: false, poolSize: 1 });
    stopListening = await other.listen(() => heard.push(performance.now()));
  });
  afterAll(async () => {
    await stopListening?.();
    await other?.close();
    if (t) await expectInvariants(t.store);
    await t?.close();
  });

  it('a retraction is heard at once; a turn within the lazy window, not before it', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'wake');
    const b = await belief(core, actor, 'wake:root');
    await new Promise((r) => setTimeout(r, LAZY_NOTIFY_MS * 2)); // the turn's own NOTIFY has gone out

    const before = performance.now();
    await retractBelief(core, actor, { beliefId: b.id, reason: 'false' });
    const committed = performance.now();
    // Sent on the next tick after the commit: heard well before a lazy NOTIFY would have gone out.
    expect(await nextNotice(before, 2_000)).toBeLessThan(committed - before + LAZY_NOTIFY_MS);

    await new Promise((r) => setTimeout(r, LAZY_NOTIFY_MS * 2));
    const turnStart = performance.now();
    const r = await assertBelief(core, actor, { claimKey: 'wake:turn', statement: 'a turn', value: 1 });
    expect(r.kind).toBe('asserted');
    const p = await belief(core, actor, 'wake:premise');
    await addJustification(core, actor, { beliefId: r.kind === 'asserted' ? r.belief.id : '', premises: [p.id] });
    // Heard, and no sooner than the lazy delay after the first of those commits would allow.
    expect(await nextNotice(turnStart, 2_000)).toBeGreaterThanOrEqual(LAZY_NOTIFY_MS - 5);
    await expectInvariants(t.store);
  });

  it('a burst of 48 turns from 8 clients sends a NOTIFY per lazy window, not one per commit', async () => {
    const core = coreOf(t.store);
    const actor = await actorIn(t.store, 'burst');
    await new Promise((r) => setTimeout(r, LAZY_NOTIFY_MS * 2));
    const from = performance.now();
    await Promise.all(
      Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; i < 6; i++)
          await assertBelief(core, actor, { claimKey: `burst:${c}:${i}`, statement: `turn ${i} of ${c}`, value: i });
      }),
    );
    const elapsed = performance.now() - from;
    await new Promise((r) => setTimeout(r, LAZY_NOTIFY_MS * 3));
    const notices = heard.filter((h) => h >= from).length;
    expect(notices).toBeGreaterThanOrEqual(1);
    expect(notices).toBeLessThanOrEqual(Math.ceil(elapsed / LAZY_NOTIFY_MS) + 1);
    expect(notices, `${notices} NOTIFYs for 48 commits in ${elapsed.toFixed(0)} ms`).toBeLessThan(48);
    await expectInvariants(t.store);
  });
});
