/**
 * Drives random command sequences against the services and the reference model (model.ts) side
 * by side, and after every command holds the database to the model: every belief's status,
 * grounding, retraction and depth; every justification; every effect's status and reached /
 * cancelled marks; the set of reversals with their status, key and retraction; every retraction's
 * receipt totals; no event written by a command the model calls a no-op; and checkInvariants empty.
 *
 * Commands are plain data (so fast-check prints and shrinks them and a regression can replay one);
 * each names its targets by "picks" resolved modulo the model's current candidates, so any
 * shrunk sequence is still a valid one.
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Actor, Core } from '../../src/core';
import { addJustification, assertBelief } from '../../src/belief/belief.service';
import { survivorIds } from '../../src/derivation/justification.repository';
import {
  claimEffect,
  completeEffect,
  failEffect,
  proposeEffect,
  registerEffectKind,
} from '../../src/effect/effect.service';
import { DomainError } from '../../src/errors/domain-error';
import { checkInvariants } from '../../src/invariants/check';
import { type Preview, previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { confirmReversal } from '../../src/reversal/reversal.service';
import { reinstateRetraction, restoreEffect } from '../../src/reinstatement/reinstatement.service';
import type { Store } from '../../src/store/engine';
import { readTx } from '../../src/store/tx';
import { type KindName, type Money, type RetractionPlan, type Refusal, Model, REVERSIBLE } from './model';

export type Cmd =
  | { t: 'assert'; reuseClaim: boolean; pick: number }
  | { t: 'derive'; premises: number[]; fit: boolean; recent: boolean }
  | { t: 'justify'; aim: 'fit' | 'any' | 'cycle' | 'retracted' | 'self' | 'dup'; b: number; premises: number[] }
  | { t: 'corroborate'; b: number; premises: number[] }
  | {
      t: 'propose';
      supports: number[];
      fit: boolean;
      kind: KindName;
      amount: Money | null;
      reuseKey: number | null;
      same?: boolean;
    }
  | { t: 'claim'; kind: KindName | null; completeNext: boolean }
  | { t: 'complete'; e: number; fit: boolean; ref: 'own' | 'other' }
  | { t: 'fail'; e: number; fit: boolean }
  | { t: 'retract'; b: number; fit: boolean; afterPreview: boolean; underEffect?: boolean }
  | { t: 'preview'; b: number; fit: boolean; retractNext: boolean; page: number | null }
  | { t: 'confirm'; r: number; fit: boolean; ref: 'fresh' | 'again' | 'ours' }
  | { t: 'reinstate'; r: number; fit: boolean }
  | { t: 'restore'; e: number; fit: boolean };

const pick = fc.nat({ max: 1000 });
const picks = fc.array(pick, { minLength: 1, maxLength: 3 });
/** Mostly aim at a target the command suits (an ACTIVE belief, an EXECUTING effect, an OWED reversal); sometimes at any. */
const fit = fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) });
const money: fc.Arbitrary<Money | null> = fc.option(
  fc.record({ amountMinor: fc.integer({ min: 1, max: 100_000 }), currency: fc.constantFrom('USD', 'EUR') }),
  { freq: 4 },
);
/**
 * Usually a fresh idempotency key; sometimes one already used: repeating the first proposal exactly
 * (`same`) must return the first effect, anything else under its key is a CONFLICT.
 */
const reuseKey = fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: pick });

/** One random command; weights favour building a graph, executing effects and retracting. */
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ t: fc.constant('assert' as const), reuseClaim: fc.boolean(), pick }) },
  {
    weight: 6,
    arbitrary: fc.record({ t: fc.constant('derive' as const), premises: picks, fit, recent: fc.boolean() }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('justify' as const),
      aim: fc.constantFrom('fit', 'fit', 'fit', 'any', 'cycle', 'cycle', 'retracted', 'self', 'dup'),
      b: pick,
      premises: picks,
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('corroborate' as const), b: pick, premises: picks }) },
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('propose' as const),
      supports: picks,
      fit,
      kind: fc.constantFrom<KindName>('rev', 'rev', 'irr'),
      amount: money,
      reuseKey,
      same: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      kind: fc.constantFrom<KindName | null>(null, null, null, null, 'rev', 'irr'),
      completeNext: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('complete' as const),
      e: pick,
      fit,
      ref: fc.constantFrom<'own' | 'other'>('own', 'own', 'other'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('fail' as const), e: pick, fit }) },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('retract' as const),
      b: pick,
      fit,
      afterPreview: fc.boolean(),
      underEffect: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('preview' as const),
      b: pick,
      fit,
      retractNext: fc.boolean(),
      page: fc.option(fc.integer({ min: 1, max: 3 }), { freq: 2 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('confirm' as const),
      r: pick,
      fit,
      ref: fc.constantFrom<'fresh' | 'again' | 'ours'>('fresh', 'fresh', 'again', 'ours'),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('reinstate' as const), r: pick, fit }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('restore' as const), e: pick, fit }) },
);

/** A command sequence of 1…maxLength commands. */
export const scenarioArb = (maxLength: number) => fc.array(cmdArb, { minLength: 1, maxLength, size: 'max' });

export interface Env {
  store: Store;
  core: Core;
  actor: Actor;
}

/** Empties every fleet-owned table (as the owner; TRUNCATE is not subject to row security). */
export async function resetTables(store: Store): Promise<void> {
  await sql`TRUNCATE belief_status_history, reinstatement_money, reinstatements, events, adjudication_leases, contradictions, reversals, effect_supports, effects, effect_kinds,
    justification_premises, justifications, beliefs, retractions, claims, agent_tokens, agents, fleets`.execute(
    store.db,
  );
}

/** How often each interesting case came up, across every scenario run in this process. */
export const coverage = new Map<string, number>();
const note = (label: string) => coverage.set(label, (coverage.get(label) ?? 0) + 1);

const at = <T>(xs: readonly T[], n: number): T | undefined => (xs.length ? xs[n % xs.length] : undefined);
const distinct = <T>(xs: T[]) => [...new Set(xs)];
const num = (a: string, b: string) => Number(a) - Number(b);

export class Runner {
  readonly m = new Model();
  readonly beliefId: string[] = [];
  readonly effectId: string[] = [];
  readonly retractionId: string[] = [];
  readonly reinstatementId: string[] = [];
  readonly trace: string[] = [];
  private refs = 0;
  private lastPreview: { root: number; preview: Preview } | null = null;
  private lastClaimed: number | null = null;
  /** The fleet's event count as of the last verification. */
  private events = 0;

  constructor(readonly env: Env) {}

  private get core() {
    return this.env.core;
  }
  private get actor() {
    return this.env.actor;
  }
  private idxs(pred: (i: number) => boolean, n: number) {
    return [...Array(n).keys()].filter(pred);
  }
  private active() {
    return this.idxs((i) => this.m.beliefs[i]!.status === 'ACTIVE', this.m.beliefs.length);
  }
  private retracted() {
    return this.idxs((i) => this.m.beliefs[i]!.status === 'RETRACTED', this.m.beliefs.length);
  }
  private allBeliefs() {
    return [...this.m.beliefs.keys()];
  }
  private ids(bs: readonly number[]) {
    return bs.map((b) => this.beliefId[b]!);
  }
  private premisesFrom(pool: number[], ps: number[]) {
    return pool.length ? distinct(ps.map((p) => at(pool, p)!)) : [];
  }

  async setup(): Promise<void> {
    await registerEffectKind(this.core, this.actor, { kind: 'rev', reversible: REVERSIBLE.rev });
    await registerEffectKind(this.core, this.actor, { kind: 'irr', reversible: REVERSIBLE.irr });
    for (let i = 0; i < 2; i++) await this.assert(`claim:${this.m.beliefs.length}`, this.m.beliefs.length, []);
    await this.verify(false);
  }

  async step(cmd: Cmd): Promise<void> {
    const preview = this.lastPreview;
    this.lastPreview = null;
    const before = this.events;
    const noop = await this.apply(cmd, preview);
    await this.verify(noop, before);
    // A preview may be followed by the retraction of the same root, as its own verified step.
    if (cmd.t === 'preview' && cmd.retractNext) await this.step({ t: 'retract', b: 0, fit: false, afterPreview: true });
    // A claim may be followed by completing the effect it just claimed, as its own verified step.
    if (cmd.t === 'claim' && cmd.completeNext && !noop) {
      const executing = this.idxs((i) => this.m.effects[i]!.status === 'EXECUTING', this.m.effects.length);
      await this.step({ t: 'complete', e: executing.indexOf(this.lastClaimed!), fit: true, ref: 'own' });
    }
  }

  /** Applies one command to the model and the services; true when the model says nothing changes. */
  private async apply(cmd: Cmd, preview: { root: number; preview: Preview } | null): Promise<boolean> {
    switch (cmd.t) {
      case 'assert': {
        const free = distinct(this.retracted().map((b) => this.m.beliefs[b]!.claimKey)).filter(
          (k) => this.m.activeFor(k) === null,
        );
        const claimKey = (cmd.reuseClaim && at(free, cmd.pick)) || `claim:${this.m.beliefs.length}`;
        return this.assert(claimKey, this.m.beliefs.length, []);
      }
      case 'derive': {
        // `recent` draws premises from the newest beliefs, which grows deep chains.
        const all = cmd.fit && this.active().length ? this.active() : this.allBeliefs();
        const pool = cmd.recent ? all.slice(-3) : all;
        return this.assert(
          `claim:${this.m.beliefs.length}`,
          this.m.beliefs.length,
          this.premisesFrom(pool, cmd.premises),
        );
      }
      case 'corroborate': {
        const b = at(this.active().length ? this.active() : this.allBeliefs(), cmd.b)!;
        const pool = this.active().length ? this.active() : this.allBeliefs();
        return this.assert(
          this.m.beliefs[b]!.claimKey,
          this.m.beliefs[b]!.value,
          this.premisesFrom(pool, cmd.premises),
        );
      }
      case 'justify':
        return this.justify(cmd);
      case 'propose': {
        const pool = cmd.fit && this.active().length ? this.active() : this.allBeliefs();
        const reuse = cmd.reuseKey === null ? undefined : at(this.m.effects, cmd.reuseKey);
        const repeat = reuse && cmd.same ? reuse : undefined;
        const supports = repeat ? [...repeat.supports].reverse() : this.premisesFrom(pool, cmd.supports);
        const [kind, amount] = repeat ? [repeat.kind, repeat.amount] : [cmd.kind, cmd.amount];
        const key = reuse?.key ?? `fx:${this.m.effects.length}`;
        const want = this.m.propose(key, kind, amount, supports);
        const call = () =>
          proposeEffect(this.core, this.actor, { kind, amount, supportedBy: this.ids(supports), idempotencyKey: key });
        if ('error' in want) {
          this.trace.push(`propose ${key} ${kind} on [${supports}] → ${want.error} (${want.because})`);
          note('propose: key reused for another proposal');
          await this.expectOutcome(want, call);
          return true;
        }
        this.trace.push(`propose ${key} ${kind} on [${supports}] → ${want.kind}`);
        note(`propose: ${want.kind === 'proposed' ? (want.created ? 'created' : 'known key') : 'premise retracted'}`);
        const got = await call();
        if (want.kind === 'premiseRetracted') {
          expect(got).toMatchObject({ kind: 'premiseRetracted', premise: { id: this.beliefId[want.premise] } });
          return true;
        }
        expect(got.kind).toBe('proposed');
        if (got.kind !== 'proposed') return true;
        expect(got.created).toBe(want.created);
        if (want.created) this.effectId[want.effect] = got.effect.id;
        expect(got.effect.id).toBe(this.effectId[want.effect]);
        return !want.created;
      }
      case 'claim': {
        const kinds = cmd.kind ? [cmd.kind] : null;
        const want = this.m.claim(kinds);
        this.lastClaimed = want;
        this.trace.push(`claim ${cmd.kind ?? '*'} → ${want === null ? 'none' : `e${want}`}`);
        note(`claim: ${want === null ? 'none ready' : 'claimed'}`);
        const got = await claimEffect(this.core, this.actor, { kinds });
        expect(got?.id ?? null).toBe(want === null ? null : this.effectId[want]);
        return want === null;
      }
      case 'complete': {
        const pool = cmd.fit ? this.idxs((i) => this.m.effects[i]!.status === 'EXECUTING', this.m.effects.length) : [];
        const e = at(pool.length ? pool : [...this.m.effects.keys()], cmd.e);
        if (e === undefined) return this.skip('complete');
        const ref = cmd.ref === 'own' ? `ext:${e}` : `ext:${e}:other`;
        const reached = this.m.effects[e]!.status === 'EXECUTING' && this.m.effects[e]!.reachedBy !== null;
        const want = this.m.complete(e, ref);
        note(
          `complete: ${'error' in want ? 'refused' : !want.changed ? 'repeat' : reached ? 'reached → reversal recorded' : 'executed'}`,
        );
        this.trace.push(
          `complete e${e} ${ref} → ${'error' in want ? want.error : want.changed ? 'EXECUTED' : 'no-op'}`,
        );
        await this.expectOutcome(want, () =>
          completeEffect(this.core, this.actor, { effectId: this.effectId[e]!, externalRef: ref }),
        );
        return 'error' in want || !want.changed;
      }
      case 'fail': {
        const pool = cmd.fit
          ? this.idxs((i) => ['PENDING', 'EXECUTING'].includes(this.m.effects[i]!.status), this.m.effects.length)
          : [];
        const e = at(pool.length ? pool : [...this.m.effects.keys()], cmd.e);
        if (e === undefined) return this.skip('fail');
        const reachedF = this.m.effects[e]!.reachedBy !== null && this.m.effects[e]!.status === 'EXECUTING';
        const want = this.m.fail(e);
        note(
          `fail: ${'error' in want ? 'refused' : !want.changed ? 'repeat' : reachedF ? 'reached, no reversal' : 'failed'}`,
        );
        this.trace.push(`fail e${e} → ${'error' in want ? want.error : want.changed ? 'FAILED' : 'no-op'}`);
        await this.expectOutcome(want, () =>
          failEffect(this.core, this.actor, { effectId: this.effectId[e]!, reason: 'executor gave up' }),
        );
        return 'error' in want || !want.changed;
      }
      case 'confirm': {
        const pool = cmd.fit ? this.idxs((i) => this.m.reversals[i]!.status === 'OWED', this.m.reversals.length) : [];
        const r = at(pool.length ? pool : [...this.m.reversals.keys()], cmd.r);
        if (r === undefined) return this.skip('confirm');
        const rev = this.m.reversals[r]!;
        const ref =
          cmd.ref === 'ours'
            ? rev.key
            : cmd.ref === 'again' && rev.providerRef
              ? rev.providerRef
              : `prv-${++this.refs}`;
        const want = this.m.confirm(r, ref);
        note(`confirm: ${'error' in want ? `${want.error} (${want.because})` : want.changed ? 'confirmed' : 'repeat'}`);
        this.trace.push(
          `confirm reversal of e${rev.effect} ${ref} → ${'error' in want ? want.error : want.changed ? 'CONFIRMED' : 'no-op'}`,
        );
        const reversalId = await this.reversalIdOf(rev.effect);
        await this.expectOutcome(want, () => confirmReversal(this.core, this.actor, { reversalId, providerRef: ref }));
        return 'error' in want || !want.changed;
      }
      case 'reinstate': {
        const pool = cmd.fit
          ? this.idxs((i) => !this.m.reinstatements.some((x) => x.retraction === i), this.m.retractions.length)
          : [];
        const r = at(pool.length ? pool : [...this.m.retractions.keys()], cmd.r);
        if (r === undefined) return this.skip('reinstate');
        const want = this.m.reinstate(r);
        const call = () =>
          reinstateRetraction(this.core, this.actor, {
            retractionId: this.retractionId[r]!,
            reason: 'shown true after all',
          });
        if ('error' in want) {
          note(`reinstate: ${want.error} (${want.because})`);
          this.trace.push(`reinstate r${r} → ${want.error} (${want.because})`);
          await this.expectOutcome(want, call);
          return true;
        }
        const ri = this.m.reinstatements[want.reinstatement]!;
        note(`reinstate: ${!want.created ? 'again (no-op)' : ri.status === 'BLOCKED' ? 'blocked' : 'reinstated'}`);
        if (want.created && ri.beliefs.length > 1) note('reinstate: cascade back');
        if (want.created && ri.contradictions > (ri.status === 'BLOCKED' ? 1 : 0))
          note('reinstate: dependent contradicted');
        if (want.created && ri.lines.some((l) => l.line === 'VOIDED')) note('reinstate: reversal voided');
        if (want.created && ri.lines.some((l) => l.line === 'REEXECUTION_OWED')) note('reinstate: re-execution owed');
        if (want.created && ri.restorable.length) note('reinstate: restorable');
        if (want.created && this.m.beliefs.some((b) => b.retraction === r)) note('reinstate: some stay down');
        this.trace.push(
          `reinstate r${r} → ${want.created ? `ri${want.reinstatement} ${ri.status}: [${ri.beliefs.map((x) => `b${x.belief}@${x.depth}`)}], lines [${ri.lines.map((l) => `${l.line} e${this.m.reversals[l.reversal]!.effect}`)}], restorable [${ri.restorable}]` : 'again, no-op'}`,
        );
        const got = await call();
        if (want.created) this.reinstatementId[want.reinstatement] = got.reinstatementId;
        expect({ id: got.reinstatementId, created: got.created, kind: got.kind }).toEqual({
          id: this.reinstatementId[want.reinstatement],
          created: want.created,
          kind: ri.status === 'BLOCKED' ? 'blocked' : 'reinstated',
        });
        return !want.created;
      }
      case 'restore': {
        const pool = cmd.fit
          ? this.m.reinstatements.flatMap((x) => x.restorable).filter((e) => this.m.effects[e]!.status === 'CANCELLED')
          : [];
        const e = at(pool.length ? pool : [...this.m.effects.keys()], cmd.e);
        if (e === undefined) return this.skip('restore');
        const want = this.m.restore(e);
        note(`restore: ${'error' in want ? `${want.error} (${want.because})` : want.changed ? 'restored' : 'repeat'}`);
        this.trace.push(`restore e${e} → ${'error' in want ? want.error : want.changed ? 'PENDING' : 'no-op'}`);
        await this.expectOutcome(want, () => restoreEffect(this.core, this.actor, { effectId: this.effectId[e]! }));
        return 'error' in want || !want.changed;
      }
      case 'preview': {
        const b = at(cmd.fit && this.active().length ? this.active() : this.allBeliefs(), cmd.b)!;
        const plan = this.m.preview(b);
        note(
          `preview: ${plan.beliefs.length === 0 ? 'retracted root' : plan.survivors.length ? 'with survivors' : 'no survivors'}`,
        );
        this.trace.push(`preview b${b} → ${plan.beliefs.length} beliefs`);
        const got = await previewRetraction(this.core, this.actor, { beliefId: this.beliefId[b]!, first: 500 });
        this.expectPlan(got, plan);
        if (cmd.page !== null) {
          // Walking the belief list in small pages (each page a fresh rolled-back cascade) yields the same list.
          const items: Preview['beliefs']['items'] = [];
          let after: string | null = null;
          for (let n = 0; ; n++) {
            const page: Preview = await previewRetraction(this.core, this.actor, {
              beliefId: this.beliefId[b]!,
              first: cmd.page,
              after,
            });
            expect(page.beliefs.totalCount).toBe(plan.beliefs.length);
            expect(page.beliefs.items.length).toBeLessThanOrEqual(cmd.page);
            items.push(...page.beliefs.items);
            if (!page.beliefs.hasNextPage) break;
            expect(n).toBeLessThan(plan.beliefs.length);
            after = page.beliefs.endCursor;
          }
          expect(items).toEqual(got.beliefs.items);
        }
        this.lastPreview = { root: b, preview: got };
        return true;
      }
      case 'retract': {
        // `underEffect` aims at an ACTIVE belief that a live or executed effect rests on, directly or through derivations.
        const under = cmd.underEffect
          ? this.active().filter((x) => {
              const down = this.m.descendants(x);
              return this.m.effects.some(
                (e) => ['PENDING', 'EXECUTING', 'EXECUTED'].includes(e.status) && e.supports.some((s) => down.has(s)),
              );
            })
          : [];
        const pool = under.length ? under : cmd.fit && this.active().length ? this.active() : this.allBeliefs();
        const b = cmd.afterPreview && preview ? preview.root : at(pool, cmd.b)!;
        const want = this.m.retract(b);
        if (!want.created) note('retract: again (no-op)');
        else {
          const p = want.plan!;
          note('retract: created');
          if (p.beliefs.length > 1) note('retract: cascade');
          if (p.beliefs.some((x) => x.depth >= 3)) note('retract: depth >= 3');
          if (p.survivors.length) note('retract: survivors');
          if (p.cancelled.length) note('retract: cancelled pending');
          if (p.reached.length) note('retract: reached executing');
          if (p.reversed.length) note('retract: reversal recorded');
          if (
            p.beliefs.some((x) =>
              this.m.effects.some(
                (ef) =>
                  ef.supports.includes(x.belief) &&
                  ef.status === 'EXECUTED' &&
                  !p.reversed.includes(this.m.effects.indexOf(ef)),
              ),
            )
          )
            note('retract: executed effect already reversed');
        }
        if (preview && preview.root === b)
          note(`retract: right after its preview (${want.created ? 'created' : 'no-op'})`);
        if (want.created)
          this.trace.push(
            `retract b${b} → r${want.retraction}: ${want.plan!.beliefs.length} beliefs, cancelled [${want.plan!.cancelled}], reached [${want.plan!.reached}], reversed [${want.plan!.reversed}]`,
          );
        else this.trace.push(`retract b${b} again → r${want.retraction}, no-op`);
        const got = await retractBelief(this.core, this.actor, { beliefId: this.beliefId[b]!, reason: 'shown false' });
        if (want.created) this.retractionId[want.retraction] = got.retractionId;
        expect(got).toEqual({ retractionId: this.retractionId[want.retraction], created: want.created });
        if (preview && preview.root === b)
          await this.expectPreviewMatchesRetraction(preview.preview, want.created ? got.retractionId : null);
        return !want.created;
      }
    }
  }

  private skip(what: string): boolean {
    this.trace.push(`${what}: nothing to target`);
    return true;
  }

  private async assert(claimKey: string, value: number, premises: number[]): Promise<boolean> {
    const want = this.m.assert(claimKey, value, premises);
    this.trace.push(
      `assert ${claimKey}=${value} from [${premises}] → ${want.kind}${'belief' in want ? ` b${want.belief}` : ''}`,
    );
    note(
      `assert: ${premises.length ? 'derived ' : 'grounded '}${want.kind}${want.kind === 'corroborated' ? (want.justified ? ' +justification' : ' (no new justification)') : ''}`,
    );
    const got = await assertBelief(this.core, this.actor, {
      claimKey,
      statement: `${claimKey} holds`,
      value,
      derivedFrom: this.ids(premises),
    });
    expect(got.kind).toBe(want.kind);
    if (want.kind === 'asserted' && got.kind === 'asserted') {
      this.beliefId[want.belief] = got.belief.id;
      expect(got.belief).toMatchObject({ status: 'ACTIVE', grounded: premises.length === 0, claim_key: claimKey });
    } else if (want.kind === 'corroborated' && got.kind === 'corroborated') {
      expect(got.belief.id).toBe(this.beliefId[want.belief]);
    } else if (want.kind === 'premiseRetracted' && got.kind === 'premiseRetracted') {
      expect(got.premise.id).toBe(this.beliefId[want.premise]);
      return true;
    }
    return false;
  }

  private async justify(cmd: Extract<Cmd, { t: 'justify' }>): Promise<boolean> {
    const active = this.active();
    let b: number | undefined;
    let premises: number[] = [];
    const fallback = () => {
      b = at(this.allBeliefs(), cmd.b)!;
      premises = this.premisesFrom(this.allBeliefs(), cmd.premises);
    };
    switch (cmd.aim) {
      case 'fit': {
        b = at(active, cmd.b);
        const down = b === undefined ? new Set<number>() : this.m.descendants(b);
        const pool = active.filter((x) => !down.has(x));
        if (b === undefined || pool.length === 0) fallback();
        else premises = this.premisesFrom(pool, cmd.premises);
        break;
      }
      case 'cycle': {
        const withDesc = active.filter((x) =>
          [...this.m.descendants(x)].some((d) => d !== x && this.m.beliefs[d]!.status === 'ACTIVE'),
        );
        b = at(withDesc, cmd.b);
        if (b === undefined) fallback();
        else {
          const desc = [...this.m.descendants(b)]
            .filter((d) => d !== b && this.m.beliefs[d]!.status === 'ACTIVE')
            .sort((x, y) => x - y);
          premises = distinct([
            at(desc, cmd.premises[0]!)!,
            ...this.premisesFrom(
              active.filter((x) => x !== b),
              cmd.premises.slice(1),
            ),
          ]);
        }
        break;
      }
      case 'retracted': {
        const gone = this.retracted();
        b = at(active, cmd.b);
        if (b === undefined || gone.length === 0) fallback();
        else
          premises = distinct([
            at(gone, cmd.premises[0]!)!,
            ...this.premisesFrom(
              active.filter((x) => x !== b),
              cmd.premises.slice(1),
            ),
          ]);
        break;
      }
      case 'self': {
        b = at(active, cmd.b);
        if (b === undefined) fallback();
        else premises = distinct([b, ...this.premisesFrom(active, cmd.premises.slice(1))]);
        break;
      }
      case 'dup': {
        const justified = this.allBeliefs().filter((x) => this.m.beliefs[x]!.justifications.length > 0);
        b = at(justified, cmd.b);
        if (b === undefined) fallback();
        else premises = [...at(this.m.beliefs[b]!.justifications, cmd.premises[0]!)!];
        break;
      }
      case 'any':
        fallback();
        break;
    }
    const target = b!;
    const want = this.m.addJustification(target, premises);
    this.trace.push(
      `justify b${target} by [${premises}] (${cmd.aim}) → ${'error' in want ? `${want.error} (${want.because})` : want.added ? 'added' : 'no-op'}`,
    );
    note(`justify: ${'error' in want ? `${want.error} (${want.because})` : want.added ? 'added' : 'known set'}`);
    await this.expectOutcome(want, () =>
      addJustification(this.core, this.actor, { beliefId: this.beliefId[target]!, premises: this.ids(premises) }),
    );
    return 'error' in want || !want.added;
  }

  /** The service must refuse with the model's code (and say why), or succeed when the model does. */
  private async expectOutcome(want: Refusal | { ok: true }, call: () => Promise<unknown>): Promise<void> {
    let err: unknown = null;
    try {
      await call();
    } catch (e) {
      err = e;
    }
    if (!('error' in want)) {
      if (err) throw err;
      return;
    }
    expect(err, `expected ${want.error} (${want.because})`).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe(want.error);
    const why: Record<string, RegExp> = {
      cycle: /cycle/,
      'premise retracted': /premises: belief \d+ is retracted/,
      'belief retracted': /cannot gain support/,
      unreachable: /UNREACHABLE/,
      'key reused': /already names effect/,
      voided: /VOIDED/,
      'root unsupported': /none of its justifications holds/,
      'not restorable': /no reinstatement took back|which no reinstatement/,
      'support retracted': /which is RETRACTED/,
    };
    if (why[want.because]) expect((err as DomainError).message).toMatch(why[want.because]!);
  }

  private async reversalIdOf(effect: number): Promise<string> {
    const r = await readTx(this.env.store, this.actor.fleet, (tx) =>
      tx.selectFrom('reversals').select('id').where('effect_id', '=', this.effectId[effect]!).executeTakeFirstOrThrow(),
    );
    return r.id;
  }

  /** A preview (or the receipt of a real retraction) must be exactly the model's plan. */
  private expectPlan(got: Preview, plan: RetractionPlan): void {
    expect({
      rootId: got.rootId,
      beliefs: got.beliefs.items,
      totalCount: got.beliefs.totalCount,
      hasNextPage: got.beliefs.hasNextPage,
      survivors: [...got.survivors].sort(num),
      pendingEffects: got.pendingEffects,
      executingEffects: got.executingEffects,
      executedEffects: got.executedEffects,
      totals: got.totals,
    }).toEqual({
      rootId: this.beliefId[plan.root],
      beliefs: plan.beliefs.map((x) => ({ id: this.beliefId[x.belief], depth: x.depth })),
      totalCount: plan.beliefs.length,
      hasNextPage: false,
      survivors: this.ids(plan.survivors),
      pendingEffects: plan.cancelled.map((e) => this.effectId[e]),
      executingEffects: plan.reached.map((e) => this.effectId[e]),
      executedEffects: plan.reversed.map((e) => this.effectId[e]),
      totals: plan.totals,
    });
  }

  /** What the retraction right after a preview of the same root really did must be what was previewed. */
  private async expectPreviewMatchesRetraction(p: Preview, retractionId: string | null): Promise<void> {
    if (retractionId === null) {
      expect(p.beliefs.totalCount).toBe(0);
      return;
    }
    const done = await readTx(this.env.store, this.actor.fleet, async (tx) => ({
      beliefs: (
        await sql<{
          id: string;
          depth: number;
        }>`SELECT id::text AS id, retraction_depth AS depth FROM beliefs WHERE retraction_id = ${retractionId} ORDER BY retraction_depth, beliefs.id`.execute(
          tx,
        )
      ).rows,
      survivors: (await survivorIds(tx, this.actor.fleet, retractionId, 10_000)).sort(num),
      cancelled: (
        await sql<{
          id: string;
        }>`SELECT id::text AS id FROM effects WHERE cancelled_by = ${retractionId} ORDER BY effects.id`.execute(tx)
      ).rows.map((r) => r.id),
      reached: (
        await sql<{
          id: string;
        }>`SELECT id::text AS id FROM effects WHERE reached_by = ${retractionId} AND status = 'EXECUTING' ORDER BY effects.id`.execute(
          tx,
        )
      ).rows.map((r) => r.id),
      reversed: (
        await sql<{
          id: string;
        }>`SELECT effect_id::text AS id FROM reversals WHERE retraction_id = ${retractionId} ORDER BY effect_id`.execute(
          tx,
        )
      ).rows.map((r) => r.id),
      totals: await totalsFor(tx, this.actor.fleet, retractionId),
    }));
    expect(done).toEqual({
      beliefs: p.beliefs.items,
      survivors: [...p.survivors].sort(num),
      cancelled: p.pendingEffects,
      reached: p.executingEffects,
      reversed: p.executedEffects,
      totals: p.totals,
    });
  }

  /** The fleet's rows equal the model's, no-ops wrote no event, and every invariant holds. */
  async verify(noop: boolean, eventsBefore?: number): Promise<void> {
    const fleet = this.actor.fleet;
    const db = await readTx(this.env.store, fleet, async (tx) => {
      const retractions = await tx
        .selectFrom('retractions')
        .select(['id', 'root_id', 'beliefs_retracted'])
        .orderBy('id')
        .execute();
      return {
        beliefs: await tx
          .selectFrom('beliefs')
          .select(['id', 'claim_key', 'value', 'grounded', 'status', 'retraction_id', 'retraction_depth'])
          .orderBy('id')
          .execute(),
        justifications: (
          await sql<{ j: string }>`
          SELECT j.belief_id::text || ' <- ' || string_agg(p.premise_id::text, ',' ORDER BY p.premise_id) AS j
            FROM justifications j JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
           WHERE j.fleet_id = ${fleet} GROUP BY j.fleet_id, j.id`.execute(tx)
        ).rows
          .map((r) => r.j)
          .sort(),
        effects: await tx
          .selectFrom('effects')
          .select([
            'id',
            'idempotency_key',
            'kind',
            'status',
            'amount_minor',
            'currency',
            'reached_by',
            'cancelled_by',
            'external_ref',
            'restored_by',
          ])
          .orderBy('id')
          .execute(),
        // Ordered by the table's columns: ORDER BY an output name would sort the ::text alias ("10" before "9").
        reinstatements: (
          await sql<{
            id: string;
            retraction_id: string;
            status: string;
            belief_ids: string[];
            belief_depths: number[];
            restorable: string[];
            contradictions: number;
          }>`
          SELECT id::text AS id, retraction_id::text AS retraction_id, status, belief_ids::text[] AS belief_ids, belief_depths,
                 restorable_effect_ids::text[] AS restorable, cardinality(contradiction_ids) AS contradictions
            FROM reinstatements ORDER BY reinstatements.id`.execute(tx)
        ).rows,
        lines: (
          await sql<{
            reinstatement_id: string;
            effect_id: string;
            line: string;
            prior_status: string;
            reexecution_key: string | null;
          }>`
          SELECT reinstatement_id::text AS reinstatement_id, effect_id::text AS effect_id, line, prior_status, reexecution_key
            FROM reinstatement_money m ORDER BY m.reinstatement_id, m.reversal_id`.execute(tx)
        ).rows,
        reversals: await tx
          .selectFrom('reversals')
          .select([
            'effect_id',
            'retraction_id',
            'status',
            'idempotency_key',
            'provider_ref',
            'amount_minor',
            'currency',
          ])
          .orderBy('effect_id')
          .execute(),
        retractions: await Promise.all(
          retractions.map(async (r) => ({ ...r, totals: await totalsFor(tx, fleet, r.id) })),
        ),
        events: (await sql<{ n: number }>`SELECT count(*)::int AS n FROM events`.execute(tx)).rows[0]!.n,
      };
    });
    const rid = (r: number | null) => (r === null ? null : this.retractionId[r]!);
    const m = this.m;
    const want = {
      beliefs: m.beliefs.map((b, i) => ({
        id: this.beliefId[i],
        claim_key: b.claimKey,
        value: b.value,
        grounded: b.grounded,
        status: b.status,
        retraction_id: rid(b.retraction),
        retraction_depth: b.depth,
      })),
      justifications: m.beliefs
        .flatMap((b, i) => b.justifications.map((j) => `${this.beliefId[i]} <- ${this.ids(j).sort(num).join(',')}`))
        .sort(),
      effects: m.effects.map((e, i) => ({
        id: this.effectId[i],
        idempotency_key: e.key,
        kind: e.kind,
        status: e.status,
        amount_minor: e.amount ? String(e.amount.amountMinor) : null,
        currency: e.amount?.currency ?? null,
        reached_by: rid(e.reachedBy),
        cancelled_by: rid(e.cancelledBy),
        external_ref: e.externalRef,
        restored_by: e.restoredBy === null ? null : this.reinstatementId[e.restoredBy]!,
      })),
      reinstatements: m.reinstatements.map((x, i) => ({
        id: this.reinstatementId[i],
        retraction_id: rid(x.retraction),
        status: x.status,
        belief_ids: x.beliefs.map((b) => this.beliefId[b.belief]),
        belief_depths: x.beliefs.map((b) => b.depth),
        restorable: x.restorable.map((e) => this.effectId[e]),
        contradictions: x.contradictions,
      })),
      lines: m.reinstatements.flatMap((x, i) =>
        [...x.lines]
          .sort((a, b) => a.reversal - b.reversal)
          .map((l) => ({
            reinstatement_id: this.reinstatementId[i],
            effect_id: this.effectId[this.m.reversals[l.reversal]!.effect],
            line: l.line,
            prior_status: l.prior,
            reexecution_key: l.key,
          })),
      ),
      reversals: [...m.reversals]
        .sort((a, b) => a.effect - b.effect)
        .map((r) => ({
          effect_id: this.effectId[r.effect],
          retraction_id: rid(r.retraction),
          status: r.status,
          idempotency_key: r.key,
          provider_ref: r.providerRef,
          amount_minor: r.amount ? String(r.amount.amountMinor) : null,
          currency: r.amount?.currency ?? null,
        })),
      retractions: m.retractions.map((r, i) => ({
        id: this.retractionId[i],
        root_id: this.beliefId[r.root],
        beliefs_retracted: r.beliefs,
        totals: m.totals(i),
      })),
    };
    const { events, ...rows } = db;
    expect(rows).toEqual(want);
    this.events = events;
    if (eventsBefore !== undefined) {
      if (noop) expect(events, 'a command the model calls a no-op wrote events').toBe(eventsBefore);
      else expect(events, 'a state change wrote no event').toBeGreaterThan(eventsBefore);
    }
    const violations = await checkInvariants(this.env.store);
    expect(violations).toEqual([]);
  }
}

/**
 * Runs one scenario in the actor's (fresh) fleet: registers the kinds `rev` (reversible) and `irr`,
 * asserts two grounded beliefs, then every command, holding the database to the model after each.
 * On a mismatch it throws with the resolved trace of what was done.
 */
export async function runScenario(env: Env, cmds: readonly Cmd[]): Promise<Runner> {
  const r = new Runner(env);
  try {
    await r.setup();
    for (const c of cmds) await r.step(c);
  } catch (e) {
    const err = e as Error;
    err.message = `${err.message}\n--- trace (model indices b#, e#, r#) ---\n${r.trace.join('\n')}`;
    throw err;
  }
  return r;
}
