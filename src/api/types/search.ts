import { type Hit, searchInTx } from '../../belief/nearest.repository';
import { searchAsOf } from '../../belief/belief-history.repository';
import { takeReadPoint } from '../../belief/snapshot';
import { badInput } from '../../errors/domain-error';
import * as v from '../../validation';
import { type Context, actorOf, builder } from '../builder';
import { fleetRead } from '../loaders';
import { BeliefRef } from './belief';

/** Largest k a search may ask for. */
const SEARCH_K_MAX = 100;

const SearchInput = builder.inputType('SearchInput', {
  description: 'A READ: nearest beliefs to a text.',
  fields: (t) => ({
    text: t.string({ required: true, description: "What to look for (embedded with the store's embedder)." }),
    k: t.int({ defaultValue: 10, description: `How many hits, 1 to ${SEARCH_K_MAX}.` }),
    includeRetracted: t.boolean({ defaultValue: false, description: 'Include RETRACTED beliefs.' }),
    claimKeyPrefix: t.string({ description: 'Only claims whose key starts with this.' }),
    asOf: t.field({
      type: 'DateTime',
      description:
        "Search the beliefs ACTIVE at this instant (with includeRetracted: every belief that existed then), each as it stood then. Ranked exactly over the fleet's rows (of the prefix), not through the index. Omitted: now.",
    }),
  }),
});

const SearchHitRef = builder.objectRef<Hit>('SearchHit').implement({
  description: 'One nearest neighbour.',
  fields: (t) => ({
    belief: t.expose('belief', { type: BeliefRef, description: 'The belief.' }),
    score: t.exposeFloat('score', { description: 'Cosine similarity, higher is nearer.' }),
  }),
});

const SearchResultRef = builder.objectRef<{ snapshot: string; hits: Hit[] }>('SearchResult').implement({
  description: 'Hits and the read point they were taken at.',
  fields: (t) => ({
    snapshot: t.exposeString('snapshot', { description: 'Opaque read point. Pass it to assertBelief as basedOn.' }),
    hits: t.expose('hits', { type: [SearchHitRef], description: 'Nearest first.' }),
  }),
});

/**
 * READ: the k beliefs nearest to the text (src/belief/nearest.repository.ts: exact within a claim-key prefix
 * of up to EXACT_PREFIX_MAX beliefs, else HNSW with pgvector's iterative scan, so the fleet,
 * status and prefix filters still return k hits; exact over the fleet with includeRetracted),
 * nearest first; and the snapshot of the same read-only transaction as the read point.
 */
async function search(
  ctx: Context,
  input: {
    text: string;
    k?: number | null;
    includeRetracted?: boolean | null;
    claimKeyPrefix?: string | null;
    asOf?: Date | null;
  },
) {
  const actor = actorOf(ctx);
  const text = v.text('input.text', input.text, v.LIMITS.statementMax, { multiline: true });
  const k = input.k ?? 10;
  if (!Number.isInteger(k) || k < 1 || k > SEARCH_K_MAX)
    throw badInput('input.k', `must be an integer from 1 to ${SEARCH_K_MAX}`);
  const prefix = v.claimKeyPrefix('input.claimKeyPrefix', input.claimKeyPrefix);
  const [e] = await ctx.core.embedder.embed([text]);
  const vector = `[${e!.join(',')}]`;
  return fleetRead(ctx, async (tx) => {
    const snapshot = await takeReadPoint(tx, actor.fleet);
    const a = { vector, k, includeRetracted: !!input.includeRetracted, prefix };
    const { hits } = input.asOf
      ? await searchAsOf(tx, actor.fleet, input.asOf, a)
      : await searchInTx(tx, actor.fleet, a);
    return { snapshot, hits };
  });
}

builder.queryField('search', (t) =>
  t.field({
    type: SearchResultRef,
    authScopes: { scope: 'beliefs:read' },
    description: 'READ phase: approximate nearest neighbours over belief embeddings, at a recorded snapshot.',
    args: { input: t.arg({ type: SearchInput, required: true, description: 'What to search for.' }) },
    resolve: (_r, a, ctx) => search(ctx, a.input),
  }),
);
