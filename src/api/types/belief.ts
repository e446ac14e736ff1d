import {
  type BeliefRow,
  activeBeliefIdForClaim,
  beliefPage,
  beliefsByIds,
  dependentPage,
} from '../../belief/belief.repository';
import { addJustification } from '../../belief/belief.service';
import type { BeliefAsOfRow } from '../../belief/belief-history.repository';
import { activeOnClaimAsOf, beliefPageAsOf } from '../../belief/belief-history.repository';
import { badInput } from '../../errors/domain-error';
import { decodeIdCursor, encodeIdCursor, pageOf } from '../../kernel/page';
import { beliefReadable } from '../../agent/access';
import { type JustificationShape, justificationsOf } from '../../derivation/justification.repository';
import { supportsOf } from '../../effect/effect.repository';
import { gid, parseGids } from '../../kernel/ids';
import * as v from '../../validation';
import { type Context, builder } from '../builder';
import { inputArg, writes, orNull } from '../shapes';
import { type FleetNodeRef, fleetNode, fleetRead, listByParent, nodeById } from '../loaders';
import { connectionOf, countedConnection, firstArg, newestFirst, pageArgs } from '../pagination';
import { AgentRef } from './agent';
import { EffectRef } from './effect';
import { RetractionRef } from './retraction';
import { BeliefStatusEnum } from './enums';

export const BeliefRef: FleetNodeRef<BeliefRow> = fleetNode('Belief', beliefsByIds, {
  description:
    'An assertion about a claim: statement, JSON value, evidence, author, status. Needs beliefs:read; a RETRACTED one is also open to receipts:read.',
  // A view as of a past instant follows the rule of the belief's status now (access.ts).
  readable: (b) => beliefReadable((b as Partial<BeliefAsOfRow>).current_status ?? b.status),
  fields: (t) => ({
    claimKey: t.exposeString('claim_key', {
      description:
        'Canonical identity of what the belief is about, e.g. customer:4411/passport.authentic. Identity never comes from the embedding.',
    }),
    statement: t.exposeString('statement', {
      description: 'The assertion in words; what the embedding is computed from.',
    }),
    value: t.expose('value', orNull('JSON', 'The asserted value; two beliefs agree when their values are equal.')),
    evidence: t.exposeString('evidence', { nullable: true, description: 'What the author cites as outside evidence.' }),
    grounded: t.exposeBoolean('grounded', {
      description:
        'True for a premise asserted on outside evidence: only a retraction of this belief itself takes it down.',
    }),
    author: t.expose('author_id', { type: AgentRef, description: 'The agent that asserted it.' }),
    createdAt: t.expose('created_at', { type: 'DateTime', description: 'When it was asserted.' }),
    status: t.expose('status', {
      type: BeliefStatusEnum,
      description: 'ACTIVE or RETRACTED (as of `asOf` when that is set).',
    }),
    retractedAt: t.expose('retracted_at', { type: 'DateTime', nullable: true, description: 'When it was retracted.' }),
    retraction: t.expose('retraction_id', orNull(RetractionRef, 'The retraction that took this belief down, if any.')),
    retractionDepth: t.exposeInt('retraction_depth', {
      nullable: true,
      description: 'Its distance from the root of the retraction that took it down (0 for the root).',
    }),
    justifications: listByParent(t, {
      field: 'Belief.justifications',
      type: JustificationRef,
      description:
        'How this belief was derived. Empty for a premise. It stays ACTIVE while at least one justification has every premise ACTIVE.',
      read: justificationsOf,
      key: (j) => j.belief_id,
    }),
    dependents: t.field({
      type: BeliefConnection,
      description: 'Beliefs that cite this one as a premise.',
      args: pageArgs(t),
      resolve: (b, args, ctx) =>
        newestFirst(ctx, args, (tx, fleet, first, after) => dependentPage(tx, fleet, b.id, first, after)),
    }),
    effects: listByParent(t, {
      field: 'Belief.effects',
      type: EffectRef,
      description: 'Effects that rest on this belief.',
      read: (tx, fleet, ids) => supportsOf(tx, fleet, 'belief_id', ids),
      key: (s) => s.belief_id,
      item: (s) => s.effect_id,
    }),
  }),
});

const JustificationRef = builder.objectRef<JustificationShape>('Justification').implement({
  description: 'One set of premises a belief was derived from. A belief may have several (alternative supports).',
  fields: (t) => ({
    id: t.id({ description: 'Global id of this justification.', resolve: (j) => gid('Justification', j.id) }),
    premises: t.expose('premise_ids', { type: [BeliefRef], description: 'The beliefs it rests on.' }),
    holds: t.exposeBoolean('holds', { description: 'True while every premise is ACTIVE.' }),
  }),
});

export const BeliefConnection = countedConnection(BeliefRef, {
  page: 'A page of beliefs.',
  edge: 'A belief and its cursor.',
});

const AS_OF =
  'Read the fleet as it stood at this instant (every change dated at or before it, to the millisecond). Omitted: now.';

builder.queryFields((t) => ({
  belief: nodeById(t, BeliefRef, 'beliefs:read', 'A belief of your fleet by id.'),
  beliefByClaim: t.field({
    type: BeliefRef,
    nullable: true,
    authScopes: { scope: 'beliefs:read' },
    description: 'The ACTIVE belief for a claim, if any (or the one ACTIVE at asOf).',
    args: {
      claimKey: t.arg.string({ required: true, description: 'The claim key.' }),
      asOf: t.arg({ type: 'DateTime', description: AS_OF }),
    },
    resolve: (_r, a, ctx) => {
      const key = v.claimKey('claimKey', a.claimKey);
      if (a.asOf)
        return fleetRead(ctx, async (tx, fleet) => (await activeOnClaimAsOf(tx, fleet, key, a.asOf!)) ?? null);
      return fleetRead(ctx, (tx, fleet) => activeBeliefIdForClaim(tx, fleet, key));
    },
  }),
  beliefs: t.field({
    type: BeliefConnection,
    authScopes: { scope: 'beliefs:read' },
    description: "Beliefs of the caller's fleet, newest first.",
    args: {
      claimKeyPrefix: t.arg.string({ description: 'Only claims whose key starts with this.' }),
      status: t.arg({ type: BeliefStatusEnum, description: 'Only beliefs in this status (at asOf, when given).' }),
      asOf: t.arg({ type: 'DateTime', description: AS_OF }),
      ids: t.arg.idList({
        description: `Only these beliefs (global ids, at most ${IDS_MAX}); one that is not a belief of your fleet is simply absent.`,
      }),
      ...pageArgs(t),
    },
    resolve: (_r, a, ctx) => {
      const prefix = v.claimKeyPrefix('claimKeyPrefix', a.claimKeyPrefix);
      const ids = beliefIdsArg(a.ids);
      if (a.asOf)
        return beliefsAsOfPage(ctx, a.asOf, { prefix, status: a.status ?? null, ids, first: a.first, after: a.after });
      return newestFirst(ctx, a, (tx, fleet, first, after) =>
        beliefPage(tx, fleet, { prefix, status: a.status ?? null, ids, first, after }),
      );
    },
  }),
}));

builder.mutationField('addJustification', (t) =>
  t.field({
    type: BeliefRef,
    authScopes: { scope: 'beliefs:write' },
    description: 'Adds an alternative justification to an existing belief. Rejects cycles.',
    args: inputArg(t, 'AddJustificationInput', 'Another set of premises for a belief.', 'The justification.', (f) => ({
      beliefId: f.id({ required: true, description: 'The belief.' }),
      premises: f.idList({ required: true, description: 'Its new premises (all ACTIVE).' }),
    })),
    resolve: resolveAddJustification,
  }),
);

/** addJustification: the belief, with its new justification. */
const resolveAddJustification = writes('Belief', addJustification, { beliefId: 'Belief', premises: 'Belief' });

/** The `beliefs(asOf:)` page: newest first, keyset by id, with totalCount, each belief as it stood at `at`. */
async function beliefsAsOfPage(
  ctx: Context,
  at: Date,
  f: {
    prefix: string | null;
    status: 'ACTIVE' | 'RETRACTED' | null;
    ids: string[] | null;
    first?: number | null;
    after?: string | null;
  },
) {
  const first = firstArg(f.first);
  const after = decodeIdCursor('after', f.after);
  const fleet = ctx.agent!.fleet_id;
  const page = await fleetRead(ctx, (tx) =>
    beliefPageAsOf(tx, fleet, at, { prefix: f.prefix, status: f.status, ids: f.ids, afterId: after, limit: first + 1 }),
  );
  return connectionOf(
    pageOf(page.rows, first, (r) => encodeIdCursor(r.id), page.total),
    (r) => encodeIdCursor(r.id),
    after !== null,
  );
}

/** Most ids `beliefs(ids:)` takes: a page's worth. */
const IDS_MAX = 500;

/** The database ids of `beliefs(ids:)`, or null when not given; BAD_USER_INPUT naming `ids` for a non-Belief id or too many. */
function beliefIdsArg(ids: ReadonlyArray<string | number> | null | undefined): string[] | null {
  if (ids == null) return null;
  if (ids.length > IDS_MAX) throw badInput('ids', `at most ${IDS_MAX} ids`);
  return parseGids('ids', ids.map(String), 'Belief');
}
