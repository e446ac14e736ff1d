import { isAhead, isKnown, parseCursor } from '../../event/event.repository';
import { readTx } from '../../store/tx';
import { LEVEL_BATCH, type StreamEvent, retractionEvents } from '../../event/tailer';
import { badInput } from '../../errors/domain-error';
import { actorOf, builder } from '../builder';
import { BeliefRef } from './belief';
import { EffectRef } from './effect';
import { TotalsRef } from './money';
import { RetractionRef } from './retraction';
import { ReversalRef } from './reversal';
import { ReinstatementRef, ReinstatementTotalsRef } from './reinstatement';
import { GranularityEnum } from './enums';

const RetractionEventRef = builder.interfaceRef<StreamEvent>('RetractionEvent').implement({
  description:
    'One step of a cascade, in the order it happened. cursor resumes a subscription without loss. Needs receipts:read.',
  authScopes: { readable: 'Receipt' },
  resolveType: (e) => e.__typename,
  fields: (t) => ({
    cursor: t.exposeString('cursor', { description: 'Pass as `after` to resume right after this event.' }),
    retraction: t.expose('retractionId', { type: RetractionRef, description: 'The retraction this step belongs to.' }),
    at: t.expose('at', { type: 'DateTime', description: "When it was written (its transaction's time)." }),
  }),
});

const impl = (name: string, description: string) =>
  builder.objectRef<StreamEvent>(name).implement({
    description,
    interfaces: [RetractionEventRef],
    isTypeOf: (e) => (e as StreamEvent).__typename === name,
    fields: () => ({}),
  });

impl('RetractionStarted', 'A retraction began: its receipt row exists and its root is about to fall.');
builder.objectRef<StreamEvent>('BeliefRetracted').implement({
  description: 'One belief fell.',
  interfaces: [RetractionEventRef],
  isTypeOf: (e) => (e as StreamEvent).__typename === 'BeliefRetracted',
  fields: (t) => ({
    belief: t.field({ type: BeliefRef, description: 'The belief that fell.', resolve: (e) => e.beliefId! }),
    depth: t.int({
      description: 'Distance from the root along the derivation graph; the root is 0.',
      resolve: (e) => e.depth ?? 0,
    }),
  }),
});
builder.objectRef<StreamEvent>('EffectCancelled').implement({
  description: 'A PENDING effect was cancelled.',
  interfaces: [RetractionEventRef],
  isTypeOf: (e) => (e as StreamEvent).__typename === 'EffectCancelled',
  fields: (t) => ({
    effect: t.field({ type: EffectRef, description: 'The cancelled effect.', resolve: (e) => e.effectId! }),
  }),
});
builder.objectRef<StreamEvent>('ReversalRecorded').implement({
  description: 'A reversal was recorded for a reached EXECUTED effect (OWED or UNREACHABLE).',
  interfaces: [RetractionEventRef],
  isTypeOf: (e) => (e as StreamEvent).__typename === 'ReversalRecorded',
  fields: (t) => ({
    reversal: t.field({ type: ReversalRef, description: 'The reversal.', resolve: (e) => e.reversalId! }),
  }),
});
builder.objectRef<StreamEvent>('RetractionCommitted').implement({
  description: 'The retraction committed; totals as of that commit.',
  interfaces: [RetractionEventRef],
  isTypeOf: (e) => (e as StreamEvent).__typename === 'RetractionCommitted',
  fields: (t) => ({
    totals: t.field({ type: TotalsRef, description: "The receipt's figures at commit.", resolve: (e) => e.totals! }),
  }),
});

// The cascade running back: a reinstatement's steps, each naming its receipt.
const reinstating = (name: string, description: string, fields: (t: any) => Record<string, unknown> = () => ({})) =>
  builder.objectRef<StreamEvent>(name).implement({
    description,
    interfaces: [RetractionEventRef],
    isTypeOf: (e) => (e as StreamEvent).__typename === name,
    fields: (t) => ({
      reinstatement: t.field({
        type: ReinstatementRef,
        description: 'The reinstatement this step belongs to (retraction is the one it takes back).',
        resolve: (e: StreamEvent) => e.reinstatementId!,
      }),
      ...fields(t),
    }),
  });
reinstating(
  'ReinstatementStarted',
  "A reinstatement began: its receipt row exists and the retraction's root is about to come back (or be blocked by a contradiction).",
);
reinstating('BeliefReinstated', 'One belief came back ACTIVE.', (t) => ({
  belief: t.field({
    type: BeliefRef,
    description: 'The belief that came back.',
    resolve: (e: StreamEvent) => e.beliefId!,
  }),
  depth: t.int({
    description:
      'Its reverse-cascade level: the root is 0, a belief comes back one level after the last premise its justification needed.',
    resolve: (e: StreamEvent) => e.depth ?? 0,
  }),
}));
reinstating(
  'ReversalVoided',
  'A reversal no longer needs to move (it was OWED and never sent, or UNREACHABLE).',
  (t) => ({
    reversal: t.field({
      type: ReversalRef,
      description: 'The reversal, now VOIDED.',
      resolve: (e: StreamEvent) => e.reversalId!,
    }),
  }),
);
reinstating(
  'EffectRestored',
  'An effect the retraction had cancelled was re-queued PENDING under its own key (restoreEffect).',
  (t) => ({
    effect: t.field({ type: EffectRef, description: 'The restored effect.', resolve: (e: StreamEvent) => e.effectId! }),
  }),
);
reinstating(
  'ReinstatementCommitted',
  'The reinstatement committed (or committed BLOCKED); totals as of that commit.',
  (t) => ({
    totals: t.field({
      type: ReinstatementTotalsRef,
      description: "The receipt's figures at commit.",
      resolve: (e: StreamEvent) => e.reinstatementTotals,
    }),
  }),
);

const batch = (name: string, description: string, fields: (t: any) => Record<string, unknown>) =>
  builder.objectRef<StreamEvent>(name).implement({
    description: `${description} Sent instead of one event per item when the subscription asks for granularity LEVEL; at most ${LEVEL_BATCH} items each.`,
    interfaces: [RetractionEventRef],
    isTypeOf: (e) => (e as StreamEvent).__typename === name,
    fields: (t) => ({
      count: t.int({ description: 'How many items this event carries.', resolve: (e: StreamEvent) => e.ids!.length }),
      ...fields(t),
    }),
  });
batch('BeliefsRetracted', 'Beliefs at one depth of the cascade fell.', (t) => ({
  beliefs: t.field({
    type: [BeliefRef],
    description: 'The beliefs that fell, in cascade order.',
    resolve: (e: StreamEvent) => e.ids!,
  }),
  depth: t.int({
    description: 'Their distance from the root along the derivation graph; the root is 0.',
    resolve: (e: StreamEvent) => e.depth ?? 0,
  }),
}));
batch('EffectsCancelled', 'PENDING effects were cancelled.', (t) => ({
  effects: t.field({ type: [EffectRef], description: 'The cancelled effects.', resolve: (e: StreamEvent) => e.ids! }),
}));
batch('ReversalsRecorded', 'Reversals were recorded for reached EXECUTED effects (OWED or UNREACHABLE).', (t) => ({
  reversals: t.field({ type: [ReversalRef], description: 'The reversals.', resolve: (e: StreamEvent) => e.ids! }),
}));
const reinstatementOf = (t: any) => ({
  reinstatement: t.field({
    type: ReinstatementRef,
    description: 'The reinstatement these steps belong to.',
    resolve: (e: StreamEvent) => e.reinstatementId!,
  }),
});
batch('BeliefsReinstated', 'Beliefs at one level of a reinstatement came back ACTIVE.', (t) => ({
  beliefs: t.field({
    type: [BeliefRef],
    description: 'The beliefs that came back, in reverse-cascade order.',
    resolve: (e: StreamEvent) => e.ids!,
  }),
  depth: t.int({
    description: 'Their reverse-cascade level; the root is 0.',
    resolve: (e: StreamEvent) => e.depth ?? 0,
  }),
  ...reinstatementOf(t),
}));
batch('ReversalsVoided', 'Reversals a reinstatement VOIDED.', (t) => ({
  reversals: t.field({
    type: [ReversalRef],
    description: 'The reversals, now VOIDED.',
    resolve: (e: StreamEvent) => e.ids!,
  }),
  ...reinstatementOf(t),
}));
batch('EffectsRestored', 'Effects re-queued PENDING by restoreEffect.', (t) => ({
  effects: t.field({ type: [EffectRef], description: 'The restored effects.', resolve: (e: StreamEvent) => e.ids! }),
  ...reinstatementOf(t),
}));

builder.subscriptionField('retractionEvents', (t) =>
  t.field({
    type: RetractionEventRef,
    authScopes: { scope: 'receipts:read' },
    description:
      'Every cascade step of every retraction and reinstatement (the cascade running back), in commit order, from after the given cursor (or from now).',
    args: {
      after: t.arg.string({ description: 'The cursor of the last event you saw.' }),
      granularity: t.arg({
        type: GranularityEnum,
        defaultValue: 'BELIEF',
        description:
          'BELIEF (the default): an event per item. LEVEL: an event per cascade level and kind. Cursors of either resume either.',
      }),
    },
    subscribe: async (_r, a, ctx) => {
      const actor = actorOf(ctx);
      const after = a.after == null ? null : parseCursor('after', a.after);
      if (after && (await readTx(ctx.core.store, actor.fleet, (tx) => isAhead(tx, actor.fleet, after)))) {
        throw badInput(
          'after',
          `names transaction ${after.tx}, which this database has not reached (a cursor from before a restore, or from another server); ` +
            'subscribe without after to start from now',
        );
      }
      if (after && !(await readTx(ctx.core.store, actor.fleet, (tx) => isKnown(tx, actor.fleet, after)))) {
        throw badInput(
          'after',
          `names event ${after.tx}/${after.seq}, which this fleet's log does not hold (a cursor from before a restore, or from another server); ` +
            'subscribe without after to start from now',
        );
      }
      const abort = new AbortController();
      const gen = retractionEvents(
        ctx.core.store,
        ctx.waker,
        actor.fleet,
        after,
        abort.signal,
        a.granularity ?? 'BELIEF',
      );
      return {
        [Symbol.asyncIterator]() {
          return this;
        },
        next: () => gen.next(),
        return: async (v?: unknown) => {
          abort.abort();
          await gen.return(undefined);
          return { done: true as const, value: v as StreamEvent };
        },
        throw: (e?: unknown) => gen.throw(e),
      } as AsyncIterableIterator<StreamEvent>;
    },
    resolve: (e) => e,
  }),
);
