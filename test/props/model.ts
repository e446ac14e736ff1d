/**
 * An in-memory reference model of RETRACT's JTMS, written from DESIGN.md alone, with no database.
 *
 * Beliefs, effects, reversals and retractions are numbered by creation order (model indices); the
 * harness maps them to database ids. Every operation returns what the service must answer and, when
 * the answer is a change, applies it. Nothing here is shared with src/: if the two disagree, one of
 * them is wrong.
 */

type BeliefStatus = 'ACTIVE' | 'RETRACTED';
type EffectStatus = 'PENDING' | 'EXECUTING' | 'EXECUTED' | 'CANCELLED' | 'FAILED';
type ReversalStatus = 'OWED' | 'CONFIRMED' | 'UNREACHABLE' | 'VOIDED';
export type KindName = 'rev' | 'irr';
export interface Money {
  amountMinor: number;
  currency: string;
}
/** A receipt's per-currency sum: exact integer minor units as a decimal string, at any size. */
interface Sum {
  amountMinor: string;
  currency: string;
}

export interface MBelief {
  claimKey: string;
  value: number;
  grounded: boolean;
  status: BeliefStatus;
  /** Each justification's premises, sorted ascending, in the order they were added. */
  justifications: number[][];
  retraction: number | null;
  depth: number | null;
}

export interface MEffect {
  key: string;
  kind: KindName;
  amount: Money | null;
  supports: number[];
  status: EffectStatus;
  /** The retraction that reached it while it was EXECUTING. */
  reachedBy: number | null;
  cancelledBy: number | null;
  externalRef: string | null;
  /** The reinstatement whose restorable list restoreEffect re-queued it from. */
  restoredBy: number | null;
}

export interface MReversal {
  effect: number;
  retraction: number;
  status: ReversalStatus;
  key: string;
  providerRef: string | null;
  amount: Money | null;
}

export interface MRetraction {
  root: number;
  beliefs: number;
  reinstated: boolean;
}

/** One reversal a reinstatement named: VOIDED (OWED or UNREACHABLE), or REEXECUTION_OWED (CONFIRMED) under its derived key. */
interface MLine {
  reversal: number;
  line: 'VOIDED' | 'REEXECUTION_OWED';
  prior: ReversalStatus;
  key: string | null;
}

export interface MReinstatement {
  retraction: number;
  status: 'REINSTATED' | 'BLOCKED';
  beliefs: Array<{ belief: number; depth: number }>;
  lines: MLine[];
  restorable: number[];
  contradictions: number;
}

/** A receipt's figures: five counts and four per-currency sums. */
export type Totals = Record<
  'beliefsRetracted' | 'effectsCancelled' | 'effectsReached' | 'reversalsOwed' | 'unreachable',
  number
> &
  Record<'exposure' | 'owed' | 'unreachableAmount' | 'settled', Sum[]>;

/** What a retraction of `root` does (or would do): the beliefs with their depth, survivors, effects and totals. */
export interface RetractionPlan {
  root: number;
  beliefs: Array<{ belief: number; depth: number }>;
  survivors: number[];
  cancelled: number[];
  reached: number[];
  /** Effects that get their reversal under this retraction (EXECUTED and not yet reversed). */
  reversed: number[];
  totals: Totals;
}

export type Refusal = { error: 'CONFLICT' | 'BAD_USER_INPUT'; because: string };

export const REVERSIBLE: Record<KindName, boolean> = { rev: true, irr: false };

/** The reversal's key as DESIGN.md fixes it: a pure function of the effect's key. */
const reversalKeyOf = (effectKey: string) => `reversal:${effectKey}`;
/** The re-execution key: a pure function of the reversal's key. */
const reexecutionKeyOf = (reversalKey: string) => `reexecution:${reversalKey}`;

const sorted = (xs: Iterable<number>) => [...new Set(xs)].sort((a, b) => a - b);
const sameSet = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export class Model {
  beliefs: MBelief[] = [];
  effects: MEffect[] = [];
  reversals: MReversal[] = [];
  retractions: MRetraction[] = [];
  reinstatements: MReinstatement[] = [];

  clone(): Model {
    const m = new Model();
    m.beliefs = structuredClone(this.beliefs);
    m.effects = structuredClone(this.effects);
    m.reversals = structuredClone(this.reversals);
    m.retractions = structuredClone(this.retractions);
    m.reinstatements = structuredClone(this.reinstatements);
    return m;
  }

  activeFor(claimKey: string): number | null {
    const i = this.beliefs.findIndex((b) => b.claimKey === claimKey && b.status === 'ACTIVE');
    return i < 0 ? null : i;
  }

  /** The lowest-numbered premise that is not ACTIVE (the services lock premises in id order). */
  firstFallen(ids: readonly number[]): number | null {
    const fallen = sorted(ids).filter((i) => this.beliefs[i]!.status !== 'ACTIVE');
    return fallen[0] ?? null;
  }

  /** Direct dependents: beliefs with a justification naming `b`, whatever their status. */
  dependents(b: number): number[] {
    const out: number[] = [];
    this.beliefs.forEach((x, i) => {
      if (x.justifications.some((j) => j.includes(b))) out.push(i);
    });
    return out;
  }

  /** `b` and everything that rests on it, transitively, over every justification ever recorded. */
  descendants(b: number): Set<number> {
    const seen = new Set([b]);
    const stack = [b];
    while (stack.length) {
      for (const d of this.dependents(stack.pop()!)) {
        if (!seen.has(d)) {
          seen.add(d);
          stack.push(d);
        }
      }
    }
    return seen;
  }

  hasJustification(b: number, premises: readonly number[]): boolean {
    const p = sorted(premises);
    return this.beliefs[b]!.justifications.some((j) => sameSet(j, p));
  }

  /**
   * assertBelief: premises re-checked first; then the ACTIVE belief on the claim decides —
   * corroborated (same value; a new, acyclic premise set is kept as a justification of a derived
   * belief), contradiction (other value), or a new belief (grounded when it has no premises).
   */
  assert(
    claimKey: string,
    value: number,
    derivedFrom: readonly number[],
  ):
    | { kind: 'asserted'; belief: number }
    | { kind: 'corroborated'; belief: number; justified: boolean }
    | { kind: 'contradiction' }
    | { kind: 'premiseRetracted'; premise: number } {
    const premises = sorted(derivedFrom);
    const fallen = this.firstFallen(premises);
    if (fallen !== null) return { kind: 'premiseRetracted', premise: fallen };
    const active = this.activeFor(claimKey);
    if (active !== null) {
      const a = this.beliefs[active]!;
      if (a.value !== value) return { kind: 'contradiction' };
      let justified = false;
      if (premises.length > 0 && !a.grounded && !this.hasJustification(active, premises)) {
        const down = this.descendants(active);
        if (!premises.some((p) => down.has(p))) {
          a.justifications.push(premises);
          justified = true;
        }
      }
      return { kind: 'corroborated', belief: active, justified };
    }
    this.beliefs.push({
      claimKey,
      value,
      grounded: premises.length === 0,
      status: 'ACTIVE',
      justifications: premises.length > 0 ? [premises] : [],
      retraction: null,
      depth: null,
    });
    return { kind: 'asserted', belief: this.beliefs.length - 1 };
  }

  /** addJustification: refused on a retracted belief, a self-premise, a retracted premise or a cycle; a known set is a no-op. */
  addJustification(b: number, premisesIn: readonly number[]): Refusal | { ok: true; added: boolean } {
    const premises = sorted(premisesIn);
    if (this.beliefs[b]!.status !== 'ACTIVE') return { error: 'CONFLICT', because: 'belief retracted' };
    if (premises.includes(b)) return { error: 'BAD_USER_INPUT', because: 'own premise' };
    if (this.firstFallen(premises) !== null) return { error: 'CONFLICT', because: 'premise retracted' };
    if (this.hasJustification(b, premises)) return { ok: true, added: false };
    const down = this.descendants(b);
    if (premises.some((p) => down.has(p))) return { error: 'CONFLICT', because: 'cycle' };
    this.beliefs[b]!.justifications.push(premises);
    return { ok: true, added: true };
  }

  /** proposeEffect: a known key returns its effect untouched; a fallen support refuses; else PENDING. */
  propose(
    key: string,
    kind: KindName,
    amount: Money | null,
    supportsIn: readonly number[],
  ): Refusal | { kind: 'proposed'; effect: number; created: boolean } | { kind: 'premiseRetracted'; premise: number } {
    const supports = sorted(supportsIn);
    const existing = this.effects.findIndex((e) => e.key === key);
    if (existing >= 0) {
      // A key names one proposal: the same kind, amount, currency and supports return it; anything else is refused.
      const e = this.effects[existing]!;
      const same =
        e.kind === kind &&
        e.amount?.amountMinor === amount?.amountMinor &&
        e.amount?.currency === amount?.currency &&
        e.supports.join() === supports.join();
      return same
        ? { kind: 'proposed', effect: existing, created: false }
        : { error: 'CONFLICT', because: 'key reused' };
    }
    const fallen = this.firstFallen(supports);
    if (fallen !== null) return { kind: 'premiseRetracted', premise: fallen };
    this.effects.push({
      key,
      kind,
      amount,
      supports,
      status: 'PENDING',
      reachedBy: null,
      cancelledBy: null,
      externalRef: null,
      restoredBy: null,
    });
    return { kind: 'proposed', effect: this.effects.length - 1, created: true };
  }

  /** claimEffect: the oldest PENDING effect (of the kinds asked) whose supports are all ACTIVE becomes EXECUTING. */
  claim(kinds: readonly KindName[] | null): number | null {
    const i = this.effects.findIndex(
      (e) =>
        e.status === 'PENDING' &&
        (!kinds || kinds.includes(e.kind)) &&
        e.supports.every((s) => this.beliefs[s]!.status === 'ACTIVE'),
    );
    if (i < 0) return null;
    this.effects[i]!.status = 'EXECUTING';
    return i;
  }

  /** completeEffect: EXECUTING → EXECUTED; a reached effect gets its reversal now, under the retraction that reached it. */
  complete(e: number, ref: string): Refusal | { ok: true; changed: boolean } {
    const x = this.effects[e]!;
    if (x.status === 'EXECUTED' && x.externalRef === ref) return { ok: true, changed: false };
    if (x.status !== 'EXECUTING') return { error: 'CONFLICT', because: `effect ${x.status}` };
    x.status = 'EXECUTED';
    x.externalRef = ref;
    const rid = x.reachedBy ?? this.minRetractionOfSupports(x);
    if (rid !== null) this.recordReversal(e, rid);
    return { ok: true, changed: true };
  }

  private minRetractionOfSupports(x: MEffect): number | null {
    const rs = x.supports.map((s) => this.beliefs[s]!.retraction).filter((r): r is number => r !== null);
    return rs.length ? Math.min(...rs) : null;
  }

  /** failEffect: PENDING or EXECUTING → FAILED, owing nothing; FAILED again is a no-op. */
  fail(e: number): Refusal | { ok: true; changed: boolean } {
    const x = this.effects[e]!;
    if (x.status === 'FAILED') return { ok: true, changed: false };
    if (x.status !== 'PENDING' && x.status !== 'EXECUTING') return { error: 'CONFLICT', because: `effect ${x.status}` };
    x.status = 'FAILED';
    return { ok: true, changed: true };
  }

  /** confirmReversal: OWED → CONFIRMED with the provider's reference; same reference again is a no-op. */
  confirm(r: number, ref: string): Refusal | { ok: true; changed: boolean } {
    const x = this.reversals[r]!;
    if (x.status === 'CONFIRMED')
      return x.providerRef === ref ? { ok: true, changed: false } : { error: 'CONFLICT', because: 'other reference' };
    if (x.status === 'UNREACHABLE') return { error: 'CONFLICT', because: 'unreachable' };
    if (x.status === 'VOIDED') return { error: 'CONFLICT', because: 'voided' };
    if (ref === x.key) return { error: 'BAD_USER_INPUT', because: 'our own reference' };
    x.status = 'CONFIRMED';
    x.providerRef = ref;
    return { ok: true, changed: true };
  }

  /**
   * At most one reversal per effect, ever: OWED, or UNREACHABLE when its kind has no compensation.
   * One a reinstatement VOIDED is owed again (under the new retraction) when a retraction reaches it.
   */
  private recordReversal(e: number, retraction: number): boolean {
    const x = this.effects[e]!;
    const known = this.reversals.find((r) => r.effect === e);
    if (known) {
      if (known.status !== 'VOIDED') return false;
      known.status = REVERSIBLE[x.kind] ? 'OWED' : 'UNREACHABLE';
      known.retraction = retraction;
      return true;
    }
    this.reversals.push({
      effect: e,
      retraction,
      status: REVERSIBLE[x.kind] ? 'OWED' : 'UNREACHABLE',
      key: reversalKeyOf(x.key),
      providerRef: null,
      amount: x.amount,
    });
    return true;
  }

  /**
   * The cascade of DESIGN.md, level by level as one statement per depth evaluates it: the root
   * falls at depth 0; at depth d the dependents of what fell at d-1 fall when they are ACTIVE, not
   * grounded, and every justification has a premise that was not ACTIVE before this level. Then
   * PENDING effects on a fallen belief are CANCELLED, EXECUTING ones not yet reached are reached,
   * EXECUTED ones without a reversal get one. Mutates this model; returns the plan.
   */
  private applyCascade(root: number): RetractionPlan {
    const rid = this.retractions.length;
    const fell: Array<{ belief: number; depth: number }> = [{ belief: root, depth: 0 }];
    const r = this.beliefs[root]!;
    r.status = 'RETRACTED';
    r.retraction = rid;
    r.depth = 0;
    // Direct dependents of every belief, built once (no justification changes during a cascade),
    // so a fan-out of 100k dependents is not 100k scans of every belief.
    const dependents = new Map<number, number[]>();
    this.beliefs.forEach((x, i) => {
      for (const p of new Set(x.justifications.flat())) {
        const ds = dependents.get(p);
        if (ds) ds.push(i);
        else dependents.set(p, [i]);
      }
    });
    let level = [root];
    for (let depth = 1; level.length > 0; depth++) {
      const candidates = sorted(level.flatMap((b) => dependents.get(b) ?? []));
      const falling = candidates.filter((c) => {
        const b = this.beliefs[c]!;
        return (
          b.status === 'ACTIVE' &&
          !b.grounded &&
          b.justifications.every((j) => j.some((p) => this.beliefs[p]!.status !== 'ACTIVE'))
        );
      });
      for (const c of falling) {
        const b = this.beliefs[c]!;
        b.status = 'RETRACTED';
        b.retraction = rid;
        b.depth = depth;
        fell.push({ belief: c, depth });
      }
      level = falling;
    }
    this.retractions.push({ root, beliefs: fell.length, reinstated: false });
    const down = new Set(fell.map((f) => f.belief));
    const survivors = sorted(
      [...this.beliefs.keys()].filter(
        (i) =>
          this.beliefs[i]!.status === 'ACTIVE' &&
          this.beliefs[i]!.justifications.some((j) => j.some((p) => down.has(p))),
      ),
    );
    const cancelled: number[] = [];
    const reached: number[] = [];
    const reversed: number[] = [];
    this.effects.forEach((e, i) => {
      if (!e.supports.some((s) => down.has(s))) return;
      if (e.status === 'PENDING') {
        e.status = 'CANCELLED';
        e.cancelledBy = rid;
        cancelled.push(i);
      } else if (e.status === 'EXECUTING' && e.reachedBy === null) {
        e.reachedBy = rid;
        reached.push(i);
      } else if (e.status === 'EXECUTED' && this.recordReversal(i, rid)) {
        reversed.push(i);
      }
    });
    fell.sort((a, b) => a.depth - b.depth || a.belief - b.belief);
    return { root, beliefs: fell, survivors, cancelled, reached, reversed, totals: this.totals(rid) };
  }

  /** retractBelief: a retracted belief answers with the retraction that took it down and changes nothing. */
  retract(root: number): { retraction: number; created: boolean; plan: RetractionPlan | null } {
    const b = this.beliefs[root]!;
    if (b.status === 'RETRACTED') return { retraction: b.retraction!, created: false, plan: null };
    const plan = this.applyCascade(root);
    return { retraction: this.retractions.length - 1, created: true, plan };
  }

  /** previewRetraction: the same cascade on a copy; an already retracted root previews as empty. */
  preview(root: number): RetractionPlan {
    if (this.beliefs[root]!.status === 'RETRACTED') {
      return { root, beliefs: [], survivors: [], cancelled: [], reached: [], reversed: [], totals: emptyTotals() };
    }
    return this.clone().applyCascade(root);
  }

  /**
   * reinstateRetraction, from DESIGN.md: asked again, the first receipt. A derived root none of
   * whose justifications holds cannot be ACTIVE: refused. A root whose claim holds another ACTIVE
   * belief: BLOCKED, one contradiction, nothing else. Otherwise the root returns, and level by level
   * each belief still down under this retraction whose justification holds with what returned
   * below returns (or, when its claim holds another ACTIVE belief, gets a contradiction and stays
   * down). Then the money of effects resting on a returned belief and on nothing still down: OWED
   * and UNREACHABLE reversals VOIDED, CONFIRMED ones re-execution owed (once per key); EXECUTING
   * effects it reached are reached by the first retraction still holding a support down, or none;
   * PENDING effects it cancelled whose supports all stand are restorable.
   */
  reinstate(rid: number): Refusal | { reinstatement: number; created: boolean } {
    const known = this.reinstatements.findIndex((x) => x.retraction === rid);
    if (known >= 0) return { reinstatement: known, created: false };
    const root = this.retractions[rid]!.root;
    const r = this.beliefs[root]!;
    const holds = (j: number[]) => j.every((p) => this.beliefs[p]!.status === 'ACTIVE');
    if (!r.grounded && !r.justifications.some(holds)) return { error: 'CONFLICT', because: 'root unsupported' };
    const ri: MReinstatement = {
      retraction: rid,
      status: 'REINSTATED',
      beliefs: [],
      lines: [],
      restorable: [],
      contradictions: 0,
    };
    this.reinstatements.push(ri);
    const idx = this.reinstatements.length - 1;
    if (this.activeFor(r.claimKey) !== null) {
      ri.status = 'BLOCKED';
      ri.contradictions = 1;
      return { reinstatement: idx, created: true };
    }
    const back = (b: number, depth: number) => {
      const x = this.beliefs[b]!;
      x.status = 'ACTIVE';
      x.retraction = null;
      x.depth = null;
      ri.beliefs.push({ belief: b, depth });
    };
    this.retractions[rid]!.reinstated = true;
    back(root, 0);
    const held = new Set<number>();
    for (let depth = 1; ; depth++) {
      const ready = [...this.beliefs.keys()].filter(
        (i) =>
          !held.has(i) &&
          this.beliefs[i]!.status === 'RETRACTED' &&
          this.beliefs[i]!.retraction === rid &&
          this.beliefs[i]!.justifications.some(holds),
      );
      if (ready.length === 0) break;
      for (const b of ready) {
        held.add(b);
        if (this.activeFor(this.beliefs[b]!.claimKey) !== null) ri.contradictions++;
      }
      const up = ready.filter((b) => this.activeFor(this.beliefs[b]!.claimKey) === null);
      for (const b of up) back(b, depth);
    }
    const returned = new Set(ri.beliefs.map((x) => x.belief));
    const reexecuted = new Set(
      this.reinstatements.flatMap((x) => x.lines.filter((l) => l.line === 'REEXECUTION_OWED').map((l) => l.reversal)),
    );
    this.reversals.forEach((rev, i) => {
      const e = this.effects[rev.effect]!;
      if (!e.supports.some((s) => returned.has(s)) || !e.supports.every((s) => this.beliefs[s]!.status === 'ACTIVE'))
        return;
      if (rev.status === 'CONFIRMED') {
        if (!reexecuted.has(i))
          ri.lines.push({ reversal: i, line: 'REEXECUTION_OWED', prior: 'CONFIRMED', key: reexecutionKeyOf(rev.key) });
      } else if (rev.status === 'OWED' || rev.status === 'UNREACHABLE') {
        ri.lines.push({ reversal: i, line: 'VOIDED', prior: rev.status, key: null });
        rev.status = 'VOIDED';
      }
    });
    this.effects.forEach((e, i) => {
      if (e.status === 'EXECUTING' && e.reachedBy === rid) e.reachedBy = this.minRetractionOfSupports(e);
      if (
        e.status === 'CANCELLED' &&
        e.cancelledBy === rid &&
        e.supports.every((s) => this.beliefs[s]!.status === 'ACTIVE')
      )
        ri.restorable.push(i);
    });
    return { reinstatement: idx, created: true };
  }

  /** restoreEffect: a CANCELLED effect a completed reinstatement lists, all supports ACTIVE, becomes PENDING; a restored one again is a no-op. */
  restore(e: number): Refusal | { ok: true; changed: boolean } {
    const x = this.effects[e]!;
    if (x.status !== 'CANCELLED')
      return x.restoredBy !== null
        ? { ok: true, changed: false }
        : { error: 'CONFLICT', because: `effect ${x.status}` };
    const by = this.reinstatements.findIndex(
      (ri) => ri.retraction === x.cancelledBy && ri.status === 'REINSTATED' && ri.restorable.includes(e),
    );
    if (by < 0) return { error: 'CONFLICT', because: 'not restorable' };
    if (!x.supports.every((s) => this.beliefs[s]!.status === 'ACTIVE'))
      return { error: 'CONFLICT', because: 'support retracted' };
    x.status = 'PENDING';
    x.cancelledBy = null;
    x.restoredBy = by;
    return { ok: true, changed: true };
  }

  /**
   * A retraction's receipt figures: counts and per-currency sums over its reversals (owed is
   * everything not UNREACHABLE, settled only CONFIRMED); effectsReached counts reversals recorded.
   */
  totals(rid: number): Totals {
    const rs = this.reversals.filter((r) => r.retraction === rid);
    const owed = rs.filter((r) => r.status !== 'UNREACHABLE' && r.status !== 'VOIDED');
    const currencies = [...new Set(rs.filter((r) => r.amount).map((r) => r.amount!.currency))].sort();
    const sum = (pred: (r: MReversal) => boolean) =>
      currencies.map((currency) => ({
        amountMinor: rs
          .filter((r) => r.amount?.currency === currency && pred(r))
          .reduce((a, r) => a + BigInt(r.amount!.amountMinor), 0n)
          .toString(),
        currency,
      }));
    return {
      beliefsRetracted: this.retractions[rid]!.beliefs,
      effectsCancelled: this.effects.filter((e) => e.cancelledBy === rid).length,
      effectsReached: rs.length,
      reversalsOwed: owed.length,
      unreachable: rs.filter((r) => r.status === 'UNREACHABLE').length,
      exposure: sum(() => true),
      owed: sum((r) => r.status !== 'UNREACHABLE' && r.status !== 'VOIDED'),
      unreachableAmount: sum((r) => r.status === 'UNREACHABLE'),
      settled: sum((r) => r.status === 'CONFIRMED'),
    };
  }
}

/** The totals of a retraction that took nothing down (the preview of an already retracted root). */
function emptyTotals(): Totals {
  return {
    beliefsRetracted: 0,
    effectsCancelled: 0,
    effectsReached: 0,
    reversalsOwed: 0,
    unreachable: 0,
    exposure: [],
    owed: [],
    unreachableAmount: [],
    settled: [],
  };
}
