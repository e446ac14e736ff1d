import { describe, expect, it } from 'vitest';
import { Model } from './model';

/**
 * The reference model pinned by hand against DESIGN.md, so that the property suite compares the
 * store with something known to be right. No database here.
 */
function grounded(m: Model, n = 1): number[] {
  return [...Array(n)].map(() => {
    const r = m.assert(`g:${m.beliefs.length}`, m.beliefs.length, []);
    if (r.kind !== 'asserted') throw new Error(r.kind);
    return r.belief;
  });
}
function derived(m: Model, premises: number[]): number {
  const r = m.assert(`d:${m.beliefs.length}`, m.beliefs.length, premises);
  if (r.kind !== 'asserted') throw new Error(r.kind);
  return r.belief;
}
function effect(m: Model, kind: 'rev' | 'irr', supports: number[], amountMinor = 100): number {
  const r = m.propose(`fx:${m.effects.length}`, kind, { amountMinor, currency: 'USD' }, supports);
  if ('error' in r || r.kind !== 'proposed') throw new Error(JSON.stringify(r));
  return r.effect;
}

describe('reference JTMS model', () => {
  it('a diamond falls level by level: root 0, both sides 1, the join 2', () => {
    const m = new Model();
    const [a] = grounded(m);
    const b = derived(m, [a!]);
    const c = derived(m, [a!]);
    const d = derived(m, [b, c]);
    const r = m.retract(a!);
    expect(r.plan!.beliefs).toEqual([
      { belief: a, depth: 0 },
      { belief: b, depth: 1 },
      { belief: c, depth: 1 },
      { belief: d, depth: 2 },
    ]);
    expect(r.plan!.survivors).toEqual([]);
  });

  it('a belief with another standing justification survives and is listed; it falls when that one goes too', () => {
    const m = new Model();
    const [a, g] = grounded(m, 2);
    const b = derived(m, [a!]);
    expect(m.addJustification(b, [g!])).toEqual({ ok: true, added: true });
    const first = m.retract(a!);
    expect(first.plan!.beliefs).toEqual([{ belief: a, depth: 0 }]);
    expect(first.plan!.survivors).toEqual([b]);
    expect(m.beliefs[b]!.status).toBe('ACTIVE');
    const second = m.retract(g!);
    expect(second.plan!.beliefs.map((x) => x.belief)).toEqual([g, b]);
    expect(m.beliefs[b]).toMatchObject({ status: 'RETRACTED', retraction: 1, depth: 1 });
  });

  it('a belief whose other justification rests on the root falls one level after that justification does', () => {
    const m = new Model();
    const [root] = grounded(m);
    const c = derived(m, [root!]);
    const b = derived(m, [root!]);
    m.addJustification(b, [c]);
    expect(m.retract(root!).plan!.beliefs).toEqual([
      { belief: root, depth: 0 },
      { belief: c, depth: 1 },
      { belief: b, depth: 2 },
    ]);
  });

  it('a grounded belief never falls by cascade, even with a justification on the root; it is a survivor', () => {
    const m = new Model();
    const [root, g] = grounded(m, 2);
    m.addJustification(g!, [root!]);
    const r = m.retract(root!);
    expect(r.plan!.beliefs.map((x) => x.belief)).toEqual([root]);
    expect(r.plan!.survivors).toEqual([g]);
  });

  it('refuses cycles, retracted premises, self-premises and support for a retracted belief; a known set is a no-op', () => {
    const m = new Model();
    const [a, x] = grounded(m, 2);
    const b = derived(m, [a!]);
    const c = derived(m, [b]);
    expect(m.addJustification(a!, [c])).toEqual({ error: 'CONFLICT', because: 'cycle' });
    expect(m.addJustification(b, [b])).toEqual({ error: 'BAD_USER_INPUT', because: 'own premise' });
    expect(m.addJustification(b, [a!])).toEqual({ ok: true, added: false });
    m.retract(x!);
    expect(m.addJustification(b, [x!])).toEqual({ error: 'CONFLICT', because: 'premise retracted' });
    m.retract(c);
    expect(m.addJustification(c, [a!])).toEqual({ error: 'CONFLICT', because: 'belief retracted' });
    // Descendants follow every recorded justification, retracted beliefs included.
    const d = derived(m, [a!]);
    expect(m.descendants(a!)).toEqual(new Set([a, b, c, d]));
  });

  it('cancels PENDING, reaches EXECUTING, owes EXECUTED once (UNREACHABLE when not reversible); complete of a reached effect owes, fail does not', () => {
    const m = new Model();
    const [a, g] = grounded(m, 2);
    const b = derived(m, [a!]);
    const doneRev = effect(m, 'rev', [a!, g!], 500);
    expect(m.claim(null)).toBe(doneRev);
    expect(m.complete(doneRev, 'x1')).toEqual({ ok: true, changed: true });
    const doneIrr = effect(m, 'irr', [b], 70);
    expect(m.claim(['rev'])).toBe(null);
    expect(m.claim(['irr'])).toBe(doneIrr);
    m.complete(doneIrr, 'x2');
    const running = effect(m, 'rev', [b, g!]);
    const failing = effect(m, 'rev', [b]);
    expect(m.claim(null)).toBe(running);
    expect(m.claim(null)).toBe(failing);
    const pending = effect(m, 'rev', [b]);
    expect(m.reversals).toEqual([]);

    const r = m.retract(a!);
    expect(r.plan).toMatchObject({ cancelled: [pending], reached: [running, failing], reversed: [doneRev, doneIrr] });
    expect(m.reversals.map((x) => [x.effect, x.status, x.key])).toEqual([
      [doneRev, 'OWED', 'reversal:fx:0'],
      [doneIrr, 'UNREACHABLE', 'reversal:fx:1'],
    ]);
    expect(r.plan!.totals).toMatchObject({
      beliefsRetracted: 2,
      effectsCancelled: 1,
      effectsReached: 2,
      reversalsOwed: 1,
      unreachable: 1,
      exposure: [{ amountMinor: '570', currency: 'USD' }],
      owed: [{ amountMinor: '500', currency: 'USD' }],
      unreachableAmount: [{ amountMinor: '70', currency: 'USD' }],
      settled: [{ amountMinor: '0', currency: 'USD' }],
    });
    expect(m.complete(running, 'x3')).toEqual({ ok: true, changed: true });
    expect(m.reversals.find((x) => x.effect === running)).toMatchObject({
      retraction: 0,
      status: 'OWED',
      key: 'reversal:fx:2',
    });
    expect(m.fail(failing)).toEqual({ ok: true, changed: true });
    expect(m.reversals.some((x) => x.effect === failing)).toBe(false);

    // A second retraction reaching an already reversed effect records nothing more.
    const second = m.retract(g!);
    expect(second.plan!.reversed).toEqual([]);
    expect(m.reversals.filter((x) => x.effect === doneRev)).toHaveLength(1);

    const owed = m.reversals.findIndex((x) => x.effect === doneRev);
    const unreachable = m.reversals.findIndex((x) => x.effect === doneIrr);
    expect(m.confirm(unreachable, 'prv-1')).toEqual({ error: 'CONFLICT', because: 'unreachable' });
    expect(m.confirm(owed, 'prv-1')).toEqual({ ok: true, changed: true });
    expect(m.confirm(owed, 'prv-1')).toEqual({ ok: true, changed: false });
    expect(m.confirm(owed, 'prv-2')).toEqual({ error: 'CONFLICT', because: 'other reference' });
    expect(m.totals(0).settled).toEqual([{ amountMinor: '500', currency: 'USD' }]);
  });

  it('retracting a retracted belief changes nothing, and its preview is empty', () => {
    const m = new Model();
    const [a] = grounded(m);
    derived(m, [a!]);
    m.retract(a!);
    const before = m.clone();
    expect(m.retract(a!)).toEqual({ retraction: 0, created: false, plan: null });
    expect(m.preview(a!).beliefs).toEqual([]);
    expect(m).toEqual(before);
  });

  it('a preview is the retraction that follows it, and changes nothing itself', () => {
    const m = new Model();
    const [a, g] = grounded(m, 2);
    const b = derived(m, [a!, g!]);
    effect(m, 'rev', [b]);
    const before = m.clone();
    const p = m.preview(a!);
    expect(m).toEqual(before);
    expect(m.retract(a!).plan).toEqual(p);
  });

  it('reinstating brings back, level by level, what fell in that retraction and is justified again; what another retraction holds down stays down', () => {
    const m = new Model();
    const [a, x] = grounded(m, 2);
    const b = derived(m, [a!]);
    const c = derived(m, [b, x!]);
    const d = derived(m, [a!]);
    const e = derived(m, [d]);
    m.addJustification(e, [c]);
    m.retract(x!);
    expect(m.beliefs[c]!.status).toBe('RETRACTED');
    const r = m.retract(a!).retraction;
    expect(m.reinstate(r)).toEqual({ reinstatement: 0, created: true });
    expect(m.reinstatements[0]!.beliefs).toEqual([
      { belief: a, depth: 0 },
      { belief: b, depth: 1 },
      { belief: d, depth: 1 },
      { belief: e, depth: 2 },
    ]);
    expect(m.beliefs[c]).toMatchObject({ status: 'RETRACTED', retraction: 0 });
    expect(m.reinstate(r)).toEqual({ reinstatement: 0, created: false });
  });

  it('voids OWED and UNREACHABLE reversals, names CONFIRMED ones re-execution owed once, lists cancelled effects restorable; a second retraction owes the voided again', () => {
    const m = new Model();
    const [a, g] = grounded(m, 2);
    const owed = effect(m, 'rev', [a!], 500);
    const irr = effect(m, 'irr', [a!], 70);
    const paid = effect(m, 'rev', [a!], 900);
    for (const fx of [owed, irr, paid]) {
      m.claim(null);
      m.complete(fx, `x${fx}`);
    }
    const pending = effect(m, 'rev', [a!, g!]);
    const r = m.retract(a!).retraction;
    m.confirm(
      m.reversals.findIndex((x) => x.effect === paid),
      'prv-1',
    );
    m.reinstate(r);
    expect(m.reinstatements[0]!.lines).toEqual([
      { reversal: 0, line: 'VOIDED', prior: 'OWED', key: null },
      { reversal: 1, line: 'VOIDED', prior: 'UNREACHABLE', key: null },
      { reversal: 2, line: 'REEXECUTION_OWED', prior: 'CONFIRMED', key: 'reexecution:reversal:fx:2' },
    ]);
    expect(m.reinstatements[0]!.restorable).toEqual([pending]);
    expect(m.totals(r)).toMatchObject({
      reversalsOwed: 1,
      unreachable: 0,
      owed: [{ amountMinor: '900', currency: 'USD' }],
    });
    expect(m.restore(pending)).toEqual({ ok: true, changed: true });
    expect(m.restore(pending)).toEqual({ ok: true, changed: false });
    const again = m.retract(a!);
    expect(again.plan!.reversed).toEqual([owed, irr]);
    expect(m.reversals.map((x) => x.status)).toEqual(['OWED', 'UNREACHABLE', 'CONFIRMED']);
    m.reinstate(again.retraction);
    // The confirmed reversal's re-execution is owed once, under its one key.
    expect(m.reinstatements[1]!.lines.map((l) => l.line)).toEqual(['VOIDED', 'VOIDED']);
  });

  it('a root whose claim was taken is BLOCKED; a derived root none of whose justifications holds is refused', () => {
    const m = new Model();
    const [a, p] = grounded(m, 2);
    const r = m.retract(a!).retraction;
    m.assert(m.beliefs[a!]!.claimKey, 99, []);
    expect(m.reinstate(r)).toEqual({ reinstatement: 0, created: true });
    expect(m.reinstatements[0]).toMatchObject({ status: 'BLOCKED', beliefs: [], contradictions: 1 });
    const d = derived(m, [p!]);
    const rd = m.retract(d).retraction;
    m.retract(p!);
    expect(m.reinstate(rd)).toEqual({ error: 'CONFLICT', because: 'root unsupported' });
  });
});
