import type {
  BeliefOut,
  EffectOut,
  ExplainOut,
  MoneyOut,
  OwedOut,
  ReceiptOut,
  ReversalOut,
  SearchOut,
} from './schemas';

/** Plain-text renderings of the tools' structured results, for models and people reading them. */

const n = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
const money = (m: MoneyOut | null) => (m ? m.formatted : 'no amount');
const sum = (list: MoneyOut[]) => (list.length === 0 ? '0' : list.map((m) => m.formatted).join(' + '));
const belief = (b: BeliefOut) =>
  `${b.claimKey} = ${JSON.stringify(b.value)} [${b.status}] "${b.statement}" (id ${b.id}, by ${b.author.name})`;
const effect = (e: EffectOut) => `${e.kind} ${money(e.amount)} [${e.status}] key ${e.idempotencyKey} (id ${e.id})`;
const reversal = (r: ReversalOut) =>
  `${r.effect?.kind ?? 'effect'} ${money(r.amount)} [${r.status}] key ${r.idempotencyKey}${r.providerRef ? ` provider ref ${r.providerRef}` : ''}` +
  `${r.reason ? ` — ${r.reason}` : ''}${r.lastError ? ` — last error: ${r.lastError}` : ''} (id ${r.id})`;

export function receiptText(r: ReceiptOut): string {
  const t = r.totals;
  const lines = [
    `Receipt ${r.retraction.id} — retracted ${r.retraction.root?.claimKey ?? 'a belief (ACTIVE again: reading it needs beliefs:read)'} at ${r.retraction.createdAt} by ${r.retraction.actor.name}`,
    `Reason: ${r.retraction.reason}`,
    '',
    `Beliefs taken down (${r.beliefs.totalCount}${r.beliefs.hasNextPage ? `, showing ${r.beliefs.items.length}; next page after ${r.beliefs.endCursor}` : ''}):`,
    ...r.beliefs.items.map((b) => `  depth ${b.depth}: ${belief(b)}`),
    `Cancelled effects (${r.cancelledEffects.length}):`,
    ...r.cancelledEffects.map((e) => `  ${effect(e)}`),
    ...(r.reachedInFlight.length
      ? [`Reached while executing (${r.reachedInFlight.length}):`, ...r.reachedInFlight.map((e) => `  ${effect(e)}`)]
      : []),
    `Reversals (${r.reversals.length}):`,
    ...r.reversals.map((x) => `  ${reversal(x)}`),
    '',
    `Totals: ${n(t.beliefsRetracted, 'belief')} retracted, ${n(t.effectsCancelled, 'effect')} cancelled, ${n(t.effectsReached, 'executed effect')} reached ` +
      `(${t.reversalsOwed} owed, ${t.unreachable} unreachable)`,
    `  exposure ${sum(t.exposure)} | owed ${sum(t.owed)} | unreachable ${sum(t.unreachableAmount)} | settled ${sum(t.settled)}`,
  ];
  return lines.join('\n');
}

export function explainText(x: ExplainOut): string {
  const lines = [
    `Belief: ${belief(x.belief)}`,
    x.belief.grounded ? `  a premise; evidence: ${x.belief.evidence ?? 'none given'}` : '  derived',
  ];
  if (x.retraction) lines.push(`Retracted by ${x.retraction.id}: ${x.retraction.why}`);
  lines.push(`Lineage (up${x.lineage.truncated ? ', truncated' : ''}):`);
  if (x.lineage.justifications.length === 0) lines.push('  none: it rests on outside evidence alone');
  const names = new Map([x.belief, ...x.lineage.beliefs].map((b) => [b.id, b.claimKey]));
  for (const j of x.lineage.justifications) {
    lines.push(
      `  ${names.get(j.beliefId ?? '') ?? j.beliefId} ⇐ [${j.premiseIds.map((p) => names.get(p) ?? p).join(', ')}] ${j.holds ? 'holds' : `fallen (lost ${j.fallenPremiseIds.map((p) => names.get(p) ?? p).join(', ')})`}`,
    );
  }
  for (const b of x.lineage.beliefs) lines.push(`  depth ${b.depth}: ${belief(b)}`);
  lines.push(
    `Dependents (down${x.dependents.truncated ? ', truncated' : ''}): ${x.dependents.beliefs.length === 0 ? 'none' : ''}`,
  );
  for (const b of x.dependents.beliefs) lines.push(`  depth ${b.depth}: ${belief(b)}`);
  lines.push(`Effects resting on it or its dependents: ${x.effects.length === 0 ? 'none' : ''}`);
  for (const e of x.effects)
    lines.push(`  ${effect(e)}${e.direct ? ' (directly)' : ''}${e.reversal ? ` reversal ${e.reversal.status}` : ''}`);
  return lines.join('\n');
}

export function owedText(o: OwedOut): string {
  return [
    `${o.totalCount} reversal${o.totalCount === 1 ? '' : 's'} owed and unsettled, totalling ${sum(o.owed)}${o.hasNextPage ? ` (showing ${o.items.length}; next page after ${o.endCursor})` : ''}:`,
    ...o.items.map((r) => `  ${reversal(r)} for retraction ${r.retraction?.id ?? '?'} (${r.retraction?.reason ?? ''})`),
  ].join('\n');
}

export function searchText(s: SearchOut): string {
  return [
    `${s.hits.length} hit${s.hits.length === 1 ? '' : 's'} (snapshot ${s.snapshot}):`,
    ...s.hits.map((h) => `  ${h.score.toFixed(3)}  ${belief(h.belief)}`),
  ].join('\n');
}
