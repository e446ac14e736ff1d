import { agentNames } from '../agent/agent.repository';
import { type BeliefRow, beliefsByIds } from '../belief/belief.repository';
import { beliefPageAsOf } from '../belief/belief-history.repository';
import { effectsByIds } from '../effect/effect.repository';
import { decodeIdCursor, encodeIdCursor, pageOf, pageSize } from '../kernel/page';
import type { Tx } from '../store/tx';
import * as v from '../validation';
import { beliefOut, effectOut, parseAnyId, reversalsByEffect } from './receipts';
import type { BeliefOut, EffectOut } from './schemas';

/**
 * What the memory tools read, through the reader path like the receipt tools: beliefs and effects as
 * the MCP answers show them, and the fleet as of an instant.
 */

/** Beliefs (rows) as answers show them, with their authors' names. */
async function beliefsOut(tx: Tx, fleet: string, rows: readonly BeliefRow[]): Promise<BeliefOut[]> {
  const names = await agentNames(
    tx,
    fleet,
    rows.map((b) => b.author_id),
  );
  return rows.map((b) => beliefOut(b, names));
}

/** Beliefs by id, in the order given (ids that name none are skipped). */
export async function beliefsById(tx: Tx, fleet: string, ids: readonly string[]): Promise<BeliefOut[]> {
  const byId = new Map((await beliefsOut(tx, fleet, await beliefsByIds(tx, fleet, ids))).map((b) => [b.dbId, b]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Effects by id, in the order given, each with its reversal. */
export async function effectsById(tx: Tx, fleet: string, ids: readonly string[]): Promise<EffectOut[]> {
  const rows = new Map((await effectsByIds(tx, fleet, ids)).map((e) => [e.id, e]));
  const reversals = await reversalsByEffect(tx, fleet, ids);
  return ids.flatMap((id) => (rows.has(id) ? [effectOut(rows.get(id)!, reversals.get(id))] : []));
}

export interface AsOfArgs {
  at: string;
  claimKeyPrefix?: string;
  status?: 'ACTIVE' | 'RETRACTED';
  ids?: string[];
  first?: number;
  after?: string;
}

/** The fleet as it stood at `at`: a page of beliefs, newest first, each with its status then and now. */
export async function beliefsAsOf(tx: Tx, fleet: string, a: AsOfArgs) {
  const at = v.instant('at', a.at);
  const first = pageSize('first', a.first);
  const after = decodeIdCursor('after', a.after || null);
  const prefix = v.claimKeyPrefix('claimKeyPrefix', a.claimKeyPrefix);
  const ids = a.ids ? a.ids.map((id, i) => parseAnyId(`ids[${i}]`, id, 'Belief')) : null;
  const page = await beliefPageAsOf(tx, fleet, at, {
    prefix,
    status: a.status ?? null,
    ids,
    afterId: after,
    limit: first + 1,
  });
  const p = pageOf(page.rows, first, (r) => encodeIdCursor(r.id), page.total);
  const names = await agentNames(
    tx,
    fleet,
    p.items.map((b) => b.author_id),
  );
  return {
    at: at.toISOString(),
    items: p.items.map((b) => ({ ...beliefOut(b, names), statusNow: b.current_status })),
    totalCount: p.totalCount,
    hasNextPage: p.hasNextPage,
    endCursor: p.endCursor,
  };
}
