import { sql } from 'kysely';
import type { BeliefRow } from '../../belief/belief.repository';
import { type Nearest, type NearestArgs, nearestBeliefs } from '../../belief/nearest';
import { beliefsAsOf, nearestAsOf } from '../../belief/belief-history.repository';
import type { Tx } from '../../store/tx';
import { takeReadPoint } from '../../belief/snapshot';
import { badInput } from '../../errors/domain-error';
import * as v from '../../validation';
import { type Context, actorOf, builder } from '../builder';
import { fleetRead } from '../loaders';
import { BeliefRef } from './belief';

/** Largest k a search may ask for. */
export const SEARCH_K_MAX = 100;
export { EF_SEARCH } from '../../belief/nearest';

export const SearchInput = builder.inputType('SearchInput', {
  description: 'A READ: nearest beliefs to a text.',
  fields: (t) => ({
    text: t.string({ required: true, description: 'What to look for (embedded with the store\'s embedder).' }),
    k: t.int({ defaultValue: 10, description: `How many hits, 1 to ${SEARCH_K_MAX}.` }),
    includeRetracted: t.boolean({ defaultValue: false, description: 'Include RETRACTED beliefs.' }),
    claimKeyPrefix: t.string({ description: 'Only claims whose key starts with this.' }),
    asOf: t.field({
      type: 'DateTime',
      description: 'Search the beliefs ACTIVE at this instant (with includeRetracted: every belief that existed then), each as it stood then. Ranked exactly over the fleet\'s rows (of the prefix), not through the index. Omitted: now.',
    }),
  }),
});

interface Hit {
  belief: BeliefRow;
  score: number;
}

export const SearchHitRef = builder.objectRef<Hit>('SearchHit').implement({
  description: 'One nearest neighbour.',
  fields: (t) => ({
    belief: t.field({ type: BeliefRef, description: 'The belief.', resolve: (h) => h.belief }),
    score: t.float({ description: 'Cosine similarity, higher is nearer.', resolve: (h) => h.score }),
  }),
});

export const SearchResultRef = builder.objectRef<{ snapshot: string; hits: Hit[] }>('SearchResult').implement({
  description: 'Hits and the read point they were taken at.',
  fields: (t) => ({
    snapshot: t.string({ description: 'Opaque read point. Pass it to assertBelief as basedOn.', resolve: (r) => r.snapshot }),
    hits: t.field({ type: [SearchHitRef], description: 'Nearest first.', resolve: (r) => r.hits }),
  }),
});

/**
 * READ: the k beliefs nearest to the text (src/belief/nearest.ts: exact within a claim-key prefix
 * of up to EXACT_PREFIX_MAX beliefs, else HNSW with pgvector's iterative scan, so the fleet,
 * status and prefix filters still return k hits; exact over the fleet with includeRetracted),
 * nearest first; and the snapshot of the same read-only transaction as the read point.
 */
export async function search(ctx: Context, input: { text: string; k?: number | null; includeRetracted?: boolean | null; claimKeyPrefix?: string | null; asOf?: Date | null }) {
  const actor = actorOf(ctx);
  const text = v.text('input.text', input.text, v.LIMITS.statementMax, { multiline: true });
  const k = input.k ?? 10;
  if (!Number.isInteger(k) || k < 1 || k > SEARCH_K_MAX) throw badInput('input.k', `must be an integer from 1 to ${SEARCH_K_MAX}`);
  const prefix = v.claimKeyPrefix('input.claimKeyPrefix', input.claimKeyPrefix);
  const [e] = await ctx.core.embedder.embed([text]);
  const vector = `[${e!.join(',')}]`;
  return fleetRead(ctx, async (tx) => {
    const snapshot = await takeReadPoint(tx, actor.fleet);
    const a = { vector, k, includeRetracted: !!input.includeRetracted, prefix };
    const { hits } = input.asOf ? await searchAsOf(tx, actor.fleet, input.asOf, a) : await searchInTx(tx, actor.fleet, a);
    return { snapshot, hits };
  });
}

/**
 * The search's query inside an open fleet transaction: the k nearest beliefs with their rows,
 * nearest first (ties by id), and which plan ranked them. Shared with the READ benchmark.
 */
export async function searchInTx(tx: Tx, fleet: string, a: NearestArgs): Promise<{ hits: Hit[]; plan: Nearest['plan'] }> {
  const near = await nearestBeliefs(tx, fleet, a);
  const rows = await sql<BeliefRow & { distance: number }>`
    WITH h AS MATERIALIZED (${near.query})
    SELECT b.id::text, b.fleet_id, b.claim_key, b.statement, b.value, b.evidence, b.author_id::text, b.grounded, b.status, b.created_at,
           b.retracted_at, b.retraction_id::text, b.retraction_depth, h.distance
      FROM h JOIN beliefs b ON b.id = h.id
     ORDER BY h.distance, h.id`.execute(tx);
  return { hits: rows.rows.map((r) => ({ belief: r, score: 1 - Number(r.distance) })), plan: near.plan };
}

/** The search as of a past instant: exact ranking over the beliefs of that instant (nearestAsOf), each row as it stood then. */
async function searchAsOf(tx: Tx, fleet: string, at: Date, a: NearestArgs): Promise<{ hits: Hit[] }> {
  const near = (await nearestAsOf(fleet, at, a).execute(tx)).rows;
  const rows = new Map((await beliefsAsOf(tx, fleet, near.map((h) => String(h.id)), at)).map((r) => [r.id, r]));
  return { hits: near.map((h) => ({ belief: rows.get(String(h.id))!, score: 1 - Number(h.distance) })) };
}
