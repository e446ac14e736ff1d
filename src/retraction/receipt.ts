import { agentNames } from '../agent/agent.repository';
import { type BeliefRow, beliefsByIds } from '../belief/belief.repository';
import { type EffectRow, effectsByIds, effectsTouchedBy } from '../effect/effect.repository';
import type { Totals } from '../kernel/money';
import type { Page } from '../kernel/page';
import { type ReversalRow, reversalsOfEffects, reversalsOfRetraction } from '../reversal/reversal.repository';
import type { Db } from '../store/tx';
import { type RetractionRow, retractedBeliefPage, retractionsByIds, totalsFor } from './retraction.repository';

/**
 * The receipt read model: what one retraction took down, cancelled, reached and owes, read in the
 * caller's transaction (one snapshot). GraphQL's Retraction fields and the MCP receipt tools both
 * read it here and only format it; the demo reads it through GraphQL.
 */

/** The effects a retraction cancelled (PENDING when it came) and those it reached while they ran (still EXECUTING). */
export async function receiptEffects(
  db: Db,
  fleet: string,
  retractionId: string,
): Promise<{ cancelled: EffectRow[]; reachedInFlight: EffectRow[] }> {
  const touched = await effectsTouchedBy(db, fleet, retractionId);
  return {
    cancelled: touched.filter((e) => e.cancelled_by === retractionId),
    reachedInFlight: touched.filter((e) => e.reached_by === retractionId && e.status === 'EXECUTING'),
  };
}

export interface Receipt {
  retraction: RetractionRow;
  root: BeliefRow;
  /** One page of the beliefs it took down, in cascade order, each with its depth. */
  beliefs: Page<BeliefRow & { depth: number }>;
  cancelledEffects: EffectRow[];
  reachedInFlight: EffectRow[];
  reversals: ReversalRow[];
  totals: Totals;
  /** Every effect the receipt names (those listed, and those its reversals reverse), by id. */
  effects: Map<string, EffectRow>;
  /** The reversal of each listed effect that has one, by effect id. */
  reversalOf: Map<string, ReversalRow>;
  /** The names of the agents it names (the retraction's actor, the beliefs' authors), by id. */
  names: Map<string, string>;
}

/** The receipt of `retractionId` with one page of its beliefs, or null when the fleet has no such retraction. */
export async function readReceipt(
  db: Db,
  fleet: string,
  retractionId: string,
  first: number,
  after: string | null,
): Promise<Receipt | null> {
  const [retraction] = await retractionsByIds(db, fleet, [retractionId]);
  if (!retraction) return null;
  const page = await retractedBeliefPage(db, fleet, retractionId, first, after);
  const rows = new Map(
    (await beliefsByIds(db, fleet, [retraction.root_id, ...page.items.map((b) => b.id)])).map((b) => [b.id, b]),
  );
  const { cancelled, reachedInFlight } = await receiptEffects(db, fleet, retractionId);
  const reversals = await reversalsOfRetraction(db, fleet, retractionId);
  const listed = [...cancelled, ...reachedInFlight];
  const effects = new Map(listed.map((e) => [e.id, e]));
  for (const e of await effectsByIds(
    db,
    fleet,
    reversals.map((r) => r.effect_id).filter((id) => !effects.has(id)),
  ))
    effects.set(e.id, e);
  const reversalOf = new Map(
    (
      await reversalsOfEffects(
        db,
        fleet,
        listed.map((e) => e.id),
      )
    ).map((r) => [r.effect_id, r]),
  );
  const names = await agentNames(db, fleet, [retraction.actor_id, ...[...rows.values()].map((b) => b.author_id)]);
  return {
    retraction,
    root: rows.get(retraction.root_id)!,
    beliefs: { ...page, items: page.items.map((b) => ({ ...rows.get(b.id)!, depth: b.depth })) },
    cancelledEffects: cancelled,
    reachedInFlight,
    reversals,
    totals: await totalsFor(db, fleet, retractionId),
    effects,
    reversalOf,
    names,
  };
}
