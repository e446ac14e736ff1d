import type { BeliefAsOfRow, StatusInterval } from '../../belief/belief-history.repository';
import { retractionBeforePage, statusIntervals, supportAtExecution } from '../../belief/belief-history.repository';
import { decodeDepthCursor, encodeDepthCursor, pageOf } from '../../kernel/page';
import { beliefReadable } from '../../agent/access';
import { builder, readRule } from '../builder';
import { fleetRead, listByParent } from '../loaders';
import { connectionOf, firstArg, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { BeliefConnection, BeliefRef } from './belief';
import { EffectRef } from './effect';
import { RetractionRef } from './retraction';
import { BeliefStatusEnum } from './enums';
import { orNull } from '../shapes';

/** The fields that read the fleet as of a past instant (src/belief/belief-history.repository.ts). */

const StatusIntervalRef = builder.objectRef<StatusInterval>('BeliefStatusInterval').implement({
  description: "One interval of a belief's status, [from, to). Read under the rule of its belief.",
  authScopes: (i, ctx) => readRule(ctx, beliefReadable(i.current_status), { type: 'Belief', id: i.belief_id }),
  fields: (t) => ({
    status: t.expose('status', { type: BeliefStatusEnum, description: 'The status over the interval.' }),
    from: t.expose('from', {
      type: 'DateTime',
      description: 'When it began (the assertion, the retraction or the reinstatement).',
    }),
    to: t.expose('to', orNull('DateTime', 'When it ended; null for the current interval.')),
    retraction: t.expose(
      'retraction_id',
      orNull(RetractionRef, 'The retraction that began a RETRACTED interval or ended an ACTIVE one.'),
    ),
    reinstatementId: t.exposeID('reinstatement_id', {
      nullable: true,
      description: 'The reinstatement that ended a RETRACTED interval or began an ACTIVE one (its database id).',
    }),
    changedBy: t.expose('changed_by', {
      type: AgentRef,
      description: 'The agent whose act began it: the author, the retracting agent, or the reinstating agent.',
    }),
  }),
});

builder.objectFields(BeliefRef, (t) => ({
  asOf: t.field({
    type: 'DateTime',
    nullable: true,
    description:
      'The instant this view describes (status, retractedAt, retraction, retractionDepth as they stood then); null for now. Its other fields, and the beliefs it links to, are as they are now.',
    resolve: (b) => (b as Partial<BeliefAsOfRow>).as_of ?? null,
  }),
  statusHistory: listByParent(t, {
    field: 'Belief.statusHistory',
    type: StatusIntervalRef,
    description: 'Every interval of its status, oldest first: who changed it and by which retraction or reinstatement.',
    read: statusIntervals,
    key: (i) => i.belief_id,
  }),
}));

builder.objectField(EffectRef, 'supportAtExecution', (t) =>
  listByParent(t, {
    field: 'Effect.supportAtExecution',
    type: BeliefRef,
    nullableItems: true,
    description:
      'The beliefs this effect rested on as they stood at executedAt (each with asOf = executedAt): what the fleet believed when it acted. Empty until it executed. Each follows the Belief rule by its status now: one the token may not read is null, with a FORBIDDEN error.',
    read: supportAtExecution,
    key: (r) => r.effect_id,
  }),
);

builder.objectField(RetractionRef, 'before', (t) =>
  t.field({
    type: BeliefConnection,
    description:
      'The graph just before this retraction: every belief it took down as it stood the instant before (asOf set), in cascade order — also after a reinstatement brought them back.',
    args: pageArgs(t),
    resolve: async (r, args, ctx) => {
      const first = firstArg(args.first);
      const after = args.after == null ? null : decodeDepthCursor('after', args.after);
      const fleet = ctx.agent!.fleet_id;
      const page = await fleetRead(ctx, (tx) => retractionBeforePage(tx, fleet, r.id, after, first + 1));
      const cursorOf = (b: { depth: number; id: string }) => encodeDepthCursor(b.depth, b.id);
      return connectionOf(pageOf(page.rows, first, cursorOf, page.total), cursorOf, after !== null);
    },
  }),
);
