import { agentNames } from '../agent/agent.repository';
import { beliefIdOnClaim, beliefsByIds } from '../belief/belief.repository';
import { dependentsOf, justificationsOf } from '../derivation/justification.repository';
import { effectsRestingOn } from '../effect/effect.repository';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { gid } from '../kernel/ids';
import { retractionsByIds } from '../retraction/retraction.repository';
import type { Tx } from '../store/tx';
import * as v from '../validation';
import { beliefOut, effectOut, parseAnyId, retractionOut, reversalsByEffect } from './receipts';
import type { ExplainOut } from './schemas';

export interface ExplainArgs {
  beliefId?: string;
  claimKey?: string;
  maxDepth?: number;
}

/** Most beliefs listed in each direction before the walk stops and says `truncated`. */
const EXPLAIN_NODE_CAP = 200;

/**
 * Explains a belief: its lineage up through justifications (which hold, which premises fell), its
 * dependents down, the effects resting on it or on them, and, when RETRACTED, the retraction that
 * took it down and why. Walks one level per statement, bounded by maxDepth and EXPLAIN_NODE_CAP.
 */
export async function explainBelief(tx: Tx, fleet: string, args: ExplainArgs): Promise<ExplainOut> {
  if (!!args.beliefId === !!args.claimKey) throw badInput('beliefId', 'give exactly one of beliefId or claimKey');
  const maxDepth = args.maxDepth ?? 6;
  let id: string;
  if (args.beliefId) {
    id = parseAnyId('beliefId', args.beliefId, 'Belief');
  } else {
    const key = v.claimKey('claimKey', args.claimKey);
    const found = await beliefIdOnClaim(tx, fleet, key);
    if (!found) throw new DomainError('NOT_FOUND', `claimKey: no belief on claim ${key}`, 'claimKey');
    id = found;
  }
  const [self] = await beliefsByIds(tx, fleet, [id]);
  if (!self) throw notFound('belief', id, args.beliefId ? 'beliefId' : 'claimKey');

  // Up: justifications of each level, their premises become the next level.
  const justifications: ExplainOut['lineage']['justifications'] = [];
  const upDepth = new Map<string, number>([[id, 0]]);
  let frontier = [id];
  let upTruncated = false;
  for (let depth = 0; frontier.length > 0; depth++) {
    const next: string[] = [];
    for (const j of await justificationsOf(tx, fleet, frontier)) {
      justifications.push({
        id: gid('Justification', j.id),
        beliefId: gid('Belief', j.belief_id),
        holds: j.holds,
        premiseIds: j.premise_ids.map((p) => gid('Belief', p)),
        fallenPremiseIds: j.fallen_ids.map((p) => gid('Belief', p)),
      });
      for (const p of j.premise_ids) {
        if (upDepth.has(p)) continue;
        if (depth + 1 > maxDepth || upDepth.size > EXPLAIN_NODE_CAP) {
          upTruncated = true;
          continue;
        }
        upDepth.set(p, depth + 1);
        next.push(p);
      }
    }
    frontier = next;
  }

  // Down: beliefs citing the current level as a premise.
  const downDepth = new Map<string, number>();
  const via = new Map<string, string[]>();
  frontier = [id];
  let downTruncated = false;
  for (let depth = 1; frontier.length > 0; depth++) {
    const next: string[] = [];
    for (const d of await dependentsOf(tx, fleet, frontier)) {
      if (d.belief_id === id) continue;
      if (!downDepth.has(d.belief_id)) {
        if (depth > maxDepth || downDepth.size >= EXPLAIN_NODE_CAP) {
          downTruncated = true;
          continue;
        }
        downDepth.set(d.belief_id, depth);
        next.push(d.belief_id);
      }
      const list = via.get(d.belief_id) ?? [];
      if (!list.includes(d.premise_id)) list.push(d.premise_id);
      via.set(d.belief_id, list);
    }
    frontier = next;
  }

  const rows = new Map(
    (await beliefsByIds(tx, fleet, [id, ...upDepth.keys(), ...downDepth.keys()])).map((b) => [b.id, b]),
  );
  const byDepth = (m: Map<string, number>) =>
    [...m.entries()].filter(([b]) => b !== id).sort((a, b) => a[1] - b[1] || Number(a[0]) - Number(b[0]));
  const effects = await effectsRestingOn(tx, fleet, [id, ...downDepth.keys()], EXPLAIN_NODE_CAP);
  const reversals = await reversalsByEffect(
    tx,
    fleet,
    effects.map((e) => e.id),
  );
  const [t] = self.retraction_id ? await retractionsByIds(tx, fleet, [self.retraction_id]) : [];
  const [root] = t ? await beliefsByIds(tx, fleet, [t.root_id]) : [];
  const names = await agentNames(tx, fleet, [
    ...[...rows.values(), ...(root ? [root] : [])].map((b) => b.author_id),
    ...(t ? [t.actor_id] : []),
  ]);

  let retraction: ExplainOut['retraction'] = null;
  if (t && root) {
    const out = retractionOut(t, root, names);
    const depth = self.retraction_depth ?? 0;
    const actor = out.actor.name;
    const why =
      depth === 0
        ? `retracted directly by ${actor}: ${t.reason}`
        : `fell at depth ${depth} of the cascade from ${out.root.claimKey} (retracted by ${actor}: ${t.reason}); ` +
          `none of its justifications still held once a premise fell`;
    retraction = { ...out, depth, why };
  }

  return {
    belief: beliefOut(self, names),
    lineage: {
      justifications,
      beliefs: byDepth(upDepth).map(([b, d]) => ({ ...beliefOut(rows.get(b)!, names), depth: d })),
      truncated: upTruncated,
    },
    dependents: {
      beliefs: byDepth(downDepth).map(([b, d]) => ({
        ...beliefOut(rows.get(b)!, names),
        depth: d,
        via: (via.get(b) ?? []).map((p) => gid('Belief', p)),
      })),
      truncated: downTruncated,
    },
    effects: effects.map((e) => ({
      ...effectOut(e, reversals.get(e.id)),
      restsOn: e.rests_on.map((b) => gid('Belief', b)),
      direct: e.rests_on.includes(id),
    })),
    retraction,
  };
}
