import { type EffectRow, effectKinds, effectPage, effectsByIds, supportsOf } from '../../effect/effect.repository';
import { claimEffect, completeEffect, failEffect, proposeEffect, registerEffectKind } from '../../effect/effect.service';
import { parseGid, parseGids } from '../../kernel/ids';
import { reversalsOfEffects } from '../../reversal/reversal.repository';
import type { Actor, Core } from '../../core';
import { type Context, actorOf, builder, grantRead, readRule } from '../builder';
import { carrier, enumOf, inputArg, typed, typedUnion } from '../shapes';
import { fleetNodeRef, fleetRead, groupedLoad } from '../loaders';
import { countedConnection, newestFirst, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { PremiseRetractedRef } from './assert-belief';
import { BeliefRef } from './belief';
import { MoneyInput, MoneyRef, moneyOf } from './money';
import { RetractionRef } from './retraction';
import { ReversalRef } from './reversal';

const EffectStatusEnum = enumOf<EffectRow['status']>('EffectStatus', 'PENDING → EXECUTING → EXECUTED, or CANCELLED (by a retraction) / FAILED (by its executor).', {
  PENDING: 'Proposed, not yet taken by an executor.',
  EXECUTING: 'Taken by an executor; it may already have happened.',
  EXECUTED: 'Done; the executor reported its reference.',
  CANCELLED: 'A retraction cancelled it while PENDING: it can never run.',
  FAILED: 'Its executor reported that it did not happen.',
});

export const EffectRef = fleetNodeRef<EffectRow>('Effect', 'effect', effectsByIds);

EffectRef.implement({
  description: 'An action an agent takes on the strength of beliefs. Needs effects:propose, effects:execute or receipts:read.',
  authScopes: (e, ctx) => readRule(ctx, 'Effect', { type: 'Effect', id: e.id }),
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'A registered effect kind, e.g. refund.' }),
    status: t.field({ type: EffectStatusEnum, description: 'Where the effect stands.', resolve: (e) => e.status }),
    amount: t.field({ type: MoneyRef, nullable: true, description: 'Money moved by this effect, if any.', resolve: (e) => moneyOf(e) }),
    payload: t.field({ type: 'JSON', nullable: true, description: 'What the executor needs.', resolve: (e) => e.payload ?? null }),
    idempotencyKey: t.string({ description: 'The proposer\'s key; proposing again with it returns this effect.', resolve: (e) => e.idempotency_key }),
    supportedBy: t.loadableList({
      type: BeliefRef,
      description: 'The beliefs this effect rests on.',
      load: groupedLoad((tx, fleet, ids) => supportsOf(tx, fleet, 'effect_id', ids), (s) => s.effect_id, (s) => s.belief_id),
      resolve: (e) => e.id,
    }),
    proposedBy: t.field({ type: AgentRef, description: 'The agent that proposed it.', resolve: (e) => e.proposed_by }),
    externalRef: t.string({ nullable: true, description: 'Reference the executor reported when the effect ran.', resolve: (e) => e.external_ref }),
    failureReason: t.string({ nullable: true, description: 'Why its executor failed it.', resolve: (e) => e.failure_reason }),
    reversal: t.loadable({
      type: ReversalRef,
      nullable: true,
      description: 'The reversal recorded when a supporting belief was retracted after execution.',
      load: async (ids: string[], ctx) => {
        const byEffect = new Map((await fleetRead(ctx, (tx, fleet) => reversalsOfEffects(tx, fleet, ids))).map((r) => [r.effect_id, r.id]));
        return ids.map((id) => byEffect.get(String(id)) ?? null);
      },
      resolve: (e) => e.id,
    }),
    reachedBy: t.field({ type: RetractionRef, nullable: true, description: 'The retraction that reached it while it was EXECUTING.', resolve: (e) => e.reached_by }),
    cancelledBy: t.field({ type: RetractionRef, nullable: true, description: 'The retraction that cancelled this effect while it was PENDING.', resolve: (e) => e.cancelled_by }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was proposed.', resolve: (e) => e.created_at }),
    executedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was reported EXECUTED.', resolve: (e) => e.executed_at }),
    cancelledAt: t.field({ type: 'DateTime', nullable: true, description: 'When a retraction cancelled it.', resolve: (e) => e.cancelled_at }),
  }),
});

const EffectConnection = countedConnection(EffectRef, { page: 'A page of effects.', edge: 'An effect and its cursor.' });

const EffectKindRef = builder.simpleObject('EffectKind', {
  description: 'A registry entry for a kind of effect.',
  fields: (t) => ({
    kind: t.string({ description: 'The kind\'s name.' }),
    reversible: t.boolean({ description: 'False when no compensation handler is registered: executed effects of this kind are named UNREACHABLE when reached.' }),
  }),
});

const EffectProposedRef = carrier('EffectProposed', 'The effect, PENDING (or as it stands, when the key was used before).', 'effect', () => EffectRef, 'The effect.');

const ProposeEffectResult = typedUnion('ProposeEffectResult', 'The effect, or the support that fell.', [EffectProposedRef, PremiseRetractedRef]);

builder.queryFields((t) => ({
  effects: t.field({
    type: EffectConnection, authScopes: { $any: { scope: 'effects:propose', $any: { scope: 'effects:execute', $any: { scope: 'receipts:read' } } } } as never,
    description: 'Effects of your fleet, newest first.',
    args: { status: t.arg({ type: EffectStatusEnum, description: 'Only effects in this status.' }), ...pageArgs(t) },
    resolve: (_r, a, ctx) => newestFirst(ctx, a, (tx, fleet, first, after) => effectPage(tx, fleet, { status: a.status ?? null, first, after })),
  }),
  effectKinds: t.field({
    type: [EffectKindRef], authScopes: { authenticated: true }, description: 'The effect kinds registered in your fleet.',
    resolve: (_r, _a, ctx) => fleetRead(ctx, effectKinds),
  }),
}));

/** An executor's report on one effect, applied by `report` to the effect's database id; the caller may read the effect after. */
const applyReport = <I extends { effectId: string }>(report: (core: Core, actor: Actor, input: I) => Promise<EffectRow>) =>
  async (_r: unknown, a: { input: I }, ctx: Context) => {
    const e = await report(ctx.core, actorOf(ctx), { ...a.input, effectId: parseGid('input.effectId', String(a.input.effectId), 'Effect') });
    grantRead(ctx, 'Effect', e.id);
    return e;
  };

builder.mutationFields((t) => ({
  registerEffectKind: t.field({
    type: EffectKindRef, authScopes: { scope: 'admin' }, description: 'Registers a kind of effect and whether a compensation handler exists for it.',
    args: inputArg(t, 'RegisterEffectKindInput', 'An effect kind.', 'The kind.', (f) => ({
      kind: f.string({ required: true, description: 'Lower-case name, e.g. refund.' }),
      reversible: f.boolean({ required: true, description: 'Whether a compensation handler exists.' }),
    })),
    resolve: (_r, a, ctx) => registerEffectKind(ctx.core, actorOf(ctx), a.input),
  }),
  proposeEffect: t.field({
    type: ProposeEffectResult, authScopes: { scope: 'effects:propose' }, description: 'Writes a PENDING effect resting on ACTIVE beliefs.',
    args: inputArg(t, 'ProposeEffectInput', 'An effect.', 'The effect.', (f) => ({
      kind: f.string({ required: true, description: 'A registered effect kind.' }),
      amount: f.field({ type: MoneyInput, description: 'Money it moves, if any.' }),
      payload: f.field({ type: 'JSON', description: 'What the executor needs.' }),
      supportedBy: f.idList({ required: true, description: 'Beliefs this effect rests on. All must be ACTIVE at commit.' }),
      idempotencyKey: f.string({ required: true, description: 'Caller\'s key; proposing the same effect again under it returns the first effect; a different effect under it is a CONFLICT naming the first.' }),
    })),
    resolve: async (_r, a, ctx) => {
      const r = await proposeEffect(ctx.core, actorOf(ctx), { ...a.input, supportedBy: parseGids('input.supportedBy', a.input.supportedBy as string[], 'Belief') });
      // The effect it proposed; a premise that fell follows the Belief rule (see assertBelief).
      if (r.kind === 'proposed') grantRead(ctx, 'Effect', r.effect.id);
      return (r.kind === 'proposed' ? typed('EffectProposed', { effect: r.effect }) : typed('PremiseRetracted', { premise: r.premise })) as never;
    },
  }),
  claimEffect: t.field({
    type: EffectRef, nullable: true, authScopes: { scope: 'effects:execute' },
    description: 'Executor takes the oldest PENDING effect whose supports are all ACTIVE and marks it EXECUTING. Null when none is ready.',
    args: { input: t.arg({ type: builder.inputType('ClaimEffectInput', {
      description: 'Which effects an executor takes.',
      fields: (f) => ({ kinds: f.stringList({ description: 'Only these kinds.' }) }),
    }), description: 'Filter.' }) },
    resolve: async (_r, a, ctx) => {
      const e = await claimEffect(ctx.core, actorOf(ctx), { kinds: a.input?.kinds ?? null });
      grantRead(ctx, 'Effect', e?.id);
      return e;
    },
  }),
  completeEffect: t.field({
    type: EffectRef, authScopes: { scope: 'effects:execute' },
    description: 'EXECUTING to EXECUTED. If a support was retracted while it ran, its reversal is recorded in the same transaction.',
    args: inputArg(t, 'CompleteEffectInput', 'An executor\'s report that the effect happened.', 'The report.', (f) => ({
      effectId: f.id({ required: true, description: 'The effect.' }),
      externalRef: f.string({ required: true, description: 'The executor\'s reference for what it did.' }),
    })),
    resolve: applyReport(completeEffect),
  }),
  failEffect: t.field({
    type: EffectRef, authScopes: { scope: 'effects:execute' }, description: 'PENDING or EXECUTING to FAILED: the effect did not happen.',
    args: inputArg(t, 'FailEffectInput', 'An executor\'s report that the effect did not happen.', 'The report.', (f) => ({
      effectId: f.id({ required: true, description: 'The effect.' }),
      reason: f.string({ required: true, description: 'Why.' }),
    })),
    resolve: applyReport(failEffect),
  }),
}));
