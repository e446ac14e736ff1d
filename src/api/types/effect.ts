import { type EffectRow, effectKinds, effectPage, effectsByIds, supportsOf } from '../../effect/effect.repository';
import {
  claimEffect,
  completeEffect,
  failEffect,
  proposeEffect,
  registerEffectKind,
} from '../../effect/effect.service';
import { parseGids } from '../../kernel/ids';
import { reversalsOfEffects } from '../../reversal/reversal.repository';
import { type Context, actorOf, builder, grantRead } from '../builder';
import { carrier, inputArg, typed, typedUnion, writes, orNull } from '../shapes';
import { type FleetNodeRef, MAX_BATCH_IDS, fleetNode, fleetRead, listByParent } from '../loaders';
import { countedConnection, newestFirst, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { PremiseRetractedRef } from './assert-belief';
import { BeliefRef } from './belief';
import { MoneyInput, amountField } from './money';
import { RetractionRef } from './retraction';
import { ReversalRef } from './reversal';
import { EffectStatusEnum } from './enums';

export const EffectRef: FleetNodeRef<EffectRow> = fleetNode('Effect', effectsByIds, {
  description:
    'An action an agent takes on the strength of beliefs. Needs effects:propose, effects:execute or receipts:read.',
  readable: 'Effect',
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'A registered effect kind, e.g. refund.' }),
    amount: amountField(t, 'Money moved by this effect, if any.'),
    payload: t.expose('payload', { type: 'JSON', nullable: true, description: 'What the executor needs.' }),
    idempotencyKey: t.exposeString('idempotency_key', {
      description: "The proposer's key; proposing again with it returns this effect.",
    }),
    supportedBy: listByParent(t, {
      field: 'Effect.supportedBy',
      type: BeliefRef,
      description: 'The beliefs this effect rests on.',
      read: (tx, fleet, ids) => supportsOf(tx, fleet, 'effect_id', ids),
      key: (s) => s.effect_id,
      item: (s) => s.belief_id,
    }),
    proposedBy: t.expose('proposed_by', { type: AgentRef, description: 'The agent that proposed it.' }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was proposed.' }),
    status: t.expose('status', { type: EffectStatusEnum, description: 'Where the effect stands.' }),
    externalRef: t.exposeString('external_ref', {
      nullable: true,
      description: 'Reference the executor reported when the effect ran.',
    }),
    failureReason: t.exposeString('failure_reason', { nullable: true, description: 'Why its executor failed it.' }),
    executedAt: t.expose('executed_at', orNull('DateTime', 'When it was reported EXECUTED.')),
    reversal: t.loadable({
      type: ReversalRef,
      nullable: true,
      description: 'The reversal recorded when a supporting belief was retracted after execution.',
      load: async (ids: string[], ctx) => {
        const byEffect = new Map(
          (await fleetRead(ctx, (tx, fleet) => reversalsOfEffects(tx, fleet, ids))).map((r) => [r.effect_id, r.id]),
        );
        return ids.map((id) => byEffect.get(String(id)) ?? null);
      },
      resolve: (e) => e.id,
      loaderOptions: { maxBatchSize: MAX_BATCH_IDS },
    }),
    reachedBy: t.expose('reached_by', orNull(RetractionRef, 'The retraction that reached it while it was EXECUTING.')),
    cancelledBy: t.expose(
      'cancelled_by',
      orNull(RetractionRef, 'The retraction that cancelled this effect while it was PENDING.'),
    ),
    cancelledAt: t.expose('cancelled_at', orNull('DateTime', 'When a retraction cancelled it.')),
  }),
});

const EffectConnection = countedConnection(EffectRef, {
  page: 'A page of effects.',
  edge: 'An effect and its cursor.',
});

const EffectKindRef = builder.simpleObject('EffectKind', {
  description: 'A registry entry for a kind of effect.',
  fields: (t) => ({
    kind: t.string({ description: "The kind's name." }),
    reversible: t.boolean({
      description:
        'False when no compensation handler is registered: executed effects of this kind are named UNREACHABLE when reached.',
    }),
  }),
});

const EffectProposedRef = carrier(
  'EffectProposed',
  'The effect, PENDING (or as it stands, when the key was used before).',
  'effect',
  () => EffectRef,
  'The effect.',
);

const ProposeEffectResult = typedUnion('ProposeEffectResult', 'The effect, or the support that fell.', [
  EffectProposedRef,
  PremiseRetractedRef,
]);

builder.queryFields((t) => ({
  effects: t.field({
    type: EffectConnection,
    authScopes: {
      $any: { scope: 'effects:propose', $any: { scope: 'effects:execute', $any: { scope: 'receipts:read' } } },
    },
    description: 'Effects of your fleet, newest first.',
    args: { status: t.arg({ type: EffectStatusEnum, description: 'Only effects in this status.' }), ...pageArgs(t) },
    resolve: (_r, a, ctx) =>
      newestFirst(ctx, a, (tx, fleet, first, after) =>
        effectPage(tx, fleet, { status: a.status ?? null, first, after }),
      ),
  }),
  effectKinds: t.field({
    type: [EffectKindRef],
    authScopes: { authenticated: true },
    description: 'The effect kinds registered in your fleet.',
    resolve: (_r, _a, ctx) => fleetRead(ctx, effectKinds),
  }),
}));

builder.mutationFields((t) => ({
  registerEffectKind: t.field({
    type: EffectKindRef,
    authScopes: { scope: 'admin' },
    description: 'Registers a kind of effect and whether a compensation handler exists for it.',
    args: inputArg(t, 'RegisterEffectKindInput', 'An effect kind.', 'The kind.', (f) => ({
      kind: f.string({ required: true, description: 'Lower-case name, e.g. refund.' }),
      reversible: f.boolean({ required: true, description: 'Whether a compensation handler exists.' }),
    })),
    resolve: resolveRegisterEffectKind,
  }),
  proposeEffect: t.field({
    type: ProposeEffectResult,
    authScopes: { scope: 'effects:propose' },
    description: 'Writes a PENDING effect resting on ACTIVE beliefs.',
    args: inputArg(t, 'ProposeEffectInput', 'An effect.', 'The effect.', (f) => ({
      kind: f.string({ required: true, description: 'A registered effect kind.' }),
      amount: f.field({ type: MoneyInput, description: 'Money it moves, if any.' }),
      payload: f.field({ type: 'JSON', description: 'What the executor needs.' }),
      supportedBy: f.idList({
        required: true,
        description: 'Beliefs this effect rests on. All must be ACTIVE at commit.',
      }),
      idempotencyKey: f.string({
        required: true,
        description:
          "Caller's key; proposing the same effect again under it returns the first effect; a different effect under it is a CONFLICT naming the first.",
      }),
    })),
    resolve: resolveProposeEffect,
  }),
  claimEffect: t.field({
    type: EffectRef,
    nullable: true,
    authScopes: { scope: 'effects:execute' },
    description:
      'Executor takes the oldest PENDING effect whose supports are all ACTIVE and marks it EXECUTING. Null when none is ready.',
    args: {
      input: t.arg({
        type: builder.inputType('ClaimEffectInput', {
          description: 'Which effects an executor takes.',
          fields: (f) => ({ kinds: f.stringList({ description: 'Only these kinds.' }) }),
        }),
        description: 'Filter.',
      }),
    },
    resolve: resolveClaimEffect,
  }),
  completeEffect: t.field({
    type: EffectRef,
    authScopes: { scope: 'effects:execute' },
    description:
      'EXECUTING to EXECUTED. If a support was retracted while it ran, its reversal is recorded in the same transaction.',
    args: inputArg(t, 'CompleteEffectInput', "An executor's report that the effect happened.", 'The report.', (f) => ({
      effectId: f.id({ required: true, description: 'The effect.' }),
      externalRef: f.string({ required: true, description: "The executor's reference for what it did." }),
    })),
    resolve: resolveCompleteEffect,
  }),
  failEffect: t.field({
    type: EffectRef,
    authScopes: { scope: 'effects:execute' },
    description: 'PENDING or EXECUTING to FAILED: the effect did not happen.',
    args: inputArg(
      t,
      'FailEffectInput',
      "An executor's report that the effect did not happen.",
      'The report.',
      (f) => ({
        effectId: f.id({ required: true, description: 'The effect.' }),
        reason: f.string({ required: true, description: 'Why.' }),
      }),
    ),
    resolve: resolveFailEffect,
  }),
}));

/** registerEffectKind: the kind, registered or updated. */
function resolveRegisterEffectKind(_root: unknown, a: { input: { kind: string; reversible: boolean } }, ctx: Context) {
  return registerEffectKind(ctx.core, actorOf(ctx), a.input);
}

/** failEffect: the effect FAILED, readable to the executor that said so. */
const resolveFailEffect = writes('Effect', failEffect, { effectId: 'Effect' });

const completeOwn = writes('Effect', completeEffect, { effectId: 'Effect' });

/**
 * completeEffect's answer: the effect, and the reversal its completion recorded when a retraction had reached the
 * effect while it ran — both are what this call wrote, so the executor reads them whatever its scopes (it holds
 * effects:execute, not receipts:read). An executor that took an error for a failure would retry a completion that
 * happened. A repeated completion with the same externalRef is the same completion, and answers the same.
 */
async function resolveCompleteEffect(
  root: unknown,
  a: { input: { effectId: string; externalRef: string } },
  ctx: Context,
): Promise<EffectRow> {
  const effect = await completeOwn(root, a, ctx);
  const reversals = await fleetRead(ctx, (tx, fleet) => reversalsOfEffects(tx, fleet, [effect.id]));
  grantRead(ctx, 'Reversal', ...reversals.map((r) => r.id));
  return effect;
}

/** proposeEffect: the PENDING effect, or the premise that fell before it could rest on it. */
async function resolveProposeEffect(
  _root: unknown,
  a: {
    input: {
      kind: string;
      amount?: typeof MoneyInput.$inferInput | null;
      payload?: unknown;
      supportedBy: string[];
      idempotencyKey: string;
    };
  },
  ctx: Context,
) {
  const r = await proposeEffect(ctx.core, actorOf(ctx), {
    ...a.input,
    supportedBy: parseGids('input.supportedBy', a.input.supportedBy, 'Belief'),
  });
  // The effect it proposed; a premise that fell follows the Belief rule (see assertBelief).
  if (r.kind === 'proposed') grantRead(ctx, 'Effect', r.effect.id);
  return r.kind === 'proposed'
    ? typed('EffectProposed', { effect: r.effect })
    : typed('PremiseRetracted', { premise: r.premise });
}

/** claimEffect: the effect this executor now holds EXECUTING (readable to it), or null. */
async function resolveClaimEffect(_root: unknown, a: { input?: { kinds?: string[] | null } | null }, ctx: Context) {
  const e = await claimEffect(ctx.core, actorOf(ctx), { kinds: a.input?.kinds ?? null });
  grantRead(ctx, 'Effect', e?.id);
  return e;
}
