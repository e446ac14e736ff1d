import { sql } from 'kysely';
import type { BeliefRow } from '../../belief/belief.repository';
import { takeReadPoint } from '../../belief/snapshot';
import { badInput } from '../../errors/domain-error';
import * as v from '../../validation';
import { type Context, actorOf, builder } from '../builder';
import { fleetRead } from '../loaders';
import { BeliefRef } from './belief';

/** Largest k a search may ask for. */
export const SEARCH_K_MAX = 100;
/** HNSW candidate list size; recall/latency trade-off measured by the READ benchmark. */
export const EF_SEARCH = Number(process.env.RETRACT_EF_SEARCH ?? 100);

export const SearchInput = builder.inputType('SearchInput', {
  description: 'A READ: nearest beliefs to a text.',
  fields: (t) => ({
    text: t.string({ required: true, description: 'What to look for (embedded with the store\'s embedder).' }),
    k: t.int({ defaultValue: 10, description: `How many hits, 1 to ${SEARCH_K_MAX}.` }),
    includeRetracted: t.boolean({ defaultValue: false, description: 'Include RETRACTED beliefs.' }),
    claimKeyPrefix: t.string({ description: 'Only claims whose key starts with this.' }),
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
 * READ: approximate nearest neighbours over belief embeddings (HNSW, cosine) with pgvector's
 * iterative index scan, so the fleet, status and prefix filters still return k hits; and the
 * snapshot of the same read-only transaction as the read point.
 */
export async function search(ctx: Context, input: { text: string; k?: number | null; includeRetracted?: boolean | null; claimKeyPrefix?: string | null }) {
  const actor = actorOf(ctx);
  const text = v.text('input.text', input.text, v.LIMITS.statementMax, { multiline: true });
  const k = input.k ?? 10;
  if (!Number.isInteger(k) || k < 1 || k > SEARCH_K_MAX) throw badInput('input.k', `must be an integer from 1 to ${SEARCH_K_MAX}`);
  const prefix = v.claimKeyPrefix('input.claimKeyPrefix', input.claimKeyPrefix);
  const [e] = await ctx.core.embedder.embed([text]);
  const vec = `[${e!.join(',')}]`;
  return fleetRead(ctx, async (tx) => {
    await sql`SELECT set_config('hnsw.ef_search', ${String(Math.max(EF_SEARCH, k))}, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`.execute(tx);
    const snapshot = await takeReadPoint(tx, actor.fleet);
    const rows = await sql<BeliefRow & { distance: number }>`
      SELECT * FROM (
        SELECT id::text, fleet_id, claim_key, statement, value, evidence, author_id::text, grounded, status, created_at,
               retracted_at, retraction_id::text, retraction_depth, embedding <=> ${vec}::vector AS distance
          FROM beliefs
         WHERE fleet_id = ${actor.fleet}
           ${input.includeRetracted ? sql`` : sql`AND status = 'ACTIVE'`}
           ${prefix ? sql`AND claim_key LIKE ${likePrefix(prefix)}` : sql``}
         ORDER BY embedding <=> ${vec}::vector
         LIMIT ${k}) s
      ORDER BY distance, id`.execute(tx);
    return { snapshot, hits: rows.rows.map((r) => ({ belief: r, score: 1 - Number(r.distance) })) };
  });
}

function likePrefix(p: string): string {
  return `${p.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
