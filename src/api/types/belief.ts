import { sql } from 'kysely';
import type { BeliefRow } from '../../belief/belief.repository';
import type { BeliefAsOfRow } from '../../belief/belief-history.repository';
import { beliefReadable } from '../../agent/access';
import { type Context, builder, readRule } from '../builder';
import { gid } from '../../kernel/ids';
import { fleetRead, inOrder, loadEffectIdsByBelief, loadJustifications, loadRows, type JustificationShape } from '../loaders';
import { connectionOf, decodeIdCursor, encodeIdCursor, firstArg } from '../pagination';
import { AgentRef } from './agent';
import { EffectRef } from './effect';
import { RetractionRef } from './retraction';

export const BeliefStatusEnum = builder.enumType('BeliefStatus', {
  description: 'ACTIVE while believed; RETRACTED once taken down (never comes back: a new belief is written instead).',
  values: { ACTIVE: { description: 'Believed.' }, RETRACTED: { description: 'Taken down by a retraction.' } } as const,
});

export const BeliefRef = builder.loadableNodeRef('Belief', {
  id: { resolve: (b) => b.id },
  loaderOptions: { cache: false },
  load: async (ids: string[], ctx: Context): Promise<Array<BeliefRow | Error>> => inOrder('belief', ids, (await loadRows(ctx, 'beliefs', ids)) as unknown as BeliefRow[]),
});

BeliefRef.implement({
  description: 'An assertion about a claim: statement, JSON value, evidence, author, status. Needs beliefs:read; a RETRACTED one is also open to receipts:read.',
  // A view as of a past instant follows the rule of the belief's status now (access.ts).
  authScopes: (b, ctx) => readRule(ctx, beliefReadable((b as Partial<BeliefAsOfRow>).current_status ?? b.status), { type: 'Belief', id: b.id }),
  fields: (t) => ({
    claimKey: t.string({
      description: 'Canonical identity of what the belief is about, e.g. customer:4411/passport.authentic. Identity never comes from the embedding.',
      resolve: (b) => b.claim_key,
    }),
    statement: t.exposeString('statement', { description: 'The assertion in words; what the embedding is computed from.' }),
    value: t.field({ type: 'JSON', nullable: true, description: 'The asserted value; two beliefs agree when their values are equal.', resolve: (b) => b.value ?? null }),
    status: t.field({ type: BeliefStatusEnum, description: 'ACTIVE or RETRACTED (as of `asOf` when that is set).', resolve: (b) => b.status }),
    evidence: t.string({ nullable: true, description: 'What the author cites as outside evidence.', resolve: (b) => b.evidence }),
    grounded: t.boolean({ description: 'True for a premise asserted on outside evidence: only a retraction of this belief itself takes it down.', resolve: (b) => b.grounded }),
    author: t.field({ type: AgentRef, description: 'The agent that asserted it.', resolve: (b) => b.author_id }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was asserted.', resolve: (b) => b.created_at }),
    retractedAt: t.field({ type: 'DateTime', nullable: true, description: 'When it was retracted.', resolve: (b) => b.retracted_at }),
    retraction: t.field({ type: RetractionRef, nullable: true, description: 'The retraction that took this belief down, if any.', resolve: (b) => b.retraction_id }),
    retractionDepth: t.int({ nullable: true, description: 'Its distance from the root of the retraction that took it down (0 for the root).', resolve: (b) => b.retraction_depth }),
    justifications: t.loadableList({
      type: JustificationRef,
      description: 'How this belief was derived. Empty for a premise. It stays ACTIVE while at least one justification has every premise ACTIVE.',
      load: (ids: string[], ctx) => loadJustifications(ctx, ids),
      resolve: (b) => b.id,
    }),
    dependents: t.field({
      type: BeliefConnection,
      description: 'Beliefs that cite this one as a premise.',
      args: { first: t.arg.int({ description: 'Page size, at most 500 (default 50).' }), after: t.arg.string({ description: 'A cursor from this connection.' }) },
      resolve: async (b, args, ctx) => {
        const first = firstArg(args.first);
        const after = decodeIdCursor('after', args.after);
        return fleetRead(ctx, async (tx) => {
          const rows = await sql<BeliefRow>`
            SELECT DISTINCT b.* FROM beliefs b JOIN justifications j ON j.belief_id = b.id
              JOIN justification_premises p ON p.justification_id = j.id
             WHERE p.premise_id = ${b.id} ${after ? sql`AND b.id < ${after}::bigint` : sql``}
             ORDER BY b.id DESC LIMIT ${first + 1}`.execute(tx);
          const total = await sql<{ n: number }>`
            SELECT count(DISTINCT j.belief_id)::int AS n FROM justifications j JOIN justification_premises p ON p.justification_id = j.id
             WHERE p.premise_id = ${b.id}`.execute(tx);
          return connectionOf(rows.rows, first, (r) => encodeIdCursor(r.id), total.rows[0]!.n, after !== null) as never;
        });
      },
    }),
    effects: t.loadableList({
      type: EffectRef,
      description: 'Effects that rest on this belief.',
      load: (ids: string[], ctx) => loadEffectIdsByBelief(ctx, ids),
      resolve: (b) => b.id,
    }),
  }),
});

export const JustificationRef = builder.objectRef<JustificationShape>('Justification').implement({
  description: 'One set of premises a belief was derived from. A belief may have several (alternative supports).',
  fields: (t) => ({
    id: t.id({ description: 'Global id of this justification.', resolve: (j) => gid('Justification', j.id) }),
    premises: t.field({ type: [BeliefRef], description: 'The beliefs it rests on.', resolve: (j) => j.premise_ids }),
    holds: t.boolean({ description: 'True while every premise is ACTIVE.', resolve: (j) => j.holds }),
  }),
});

export const BeliefConnection = builder.connectionObject(
  {
    type: BeliefRef,
    name: 'BeliefConnection',
    description: 'A page of beliefs.',
    fields: (t) => ({ totalCount: t.int({ description: 'How many there are in all.', resolve: (c) => (c as unknown as { totalCount: number }).totalCount }) }),
  },
  { name: 'BeliefEdge', description: 'A belief and its cursor.' },
);

/** Loads belief rows by id for the caller's fleet (used by roots that need the row, not a key). */
export async function beliefRows(ctx: Parameters<typeof loadRows>[0], ids: string[]): Promise<BeliefRow[]> {
  return (await loadRows(ctx, 'beliefs', ids)) as unknown as BeliefRow[];
}
