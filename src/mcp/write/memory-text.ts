import type { z } from 'zod';
import type { BeliefOut, EffectOut } from '../schemas';
import type { asOfOutput, previewOutput, proposeEffectOutput, rememberOutput } from './memory-schemas';

/** Plain-text renderings of the memory tools' answers (the structured content says the same). */

type Out<S extends Record<string, z.ZodType>> = { [K in keyof S]: z.infer<S[K]> };
const belief = (b: BeliefOut) =>
  `${b.claimKey} = ${JSON.stringify(b.value)} [${b.status}] "${b.statement}" (id ${b.id})`;
const effect = (e: EffectOut) =>
  `${e.kind} ${e.amount ? e.amount.formatted : 'no amount'} [${e.status}] key ${e.idempotencyKey} (id ${e.id})`;

export function rememberText(r: Out<typeof rememberOutput>): string {
  switch (r.outcome) {
    case 'ASSERTED':
      return `Remembered: ${r.belief ? belief(r.belief) : r.claimKey}`;
    case 'CORROBORATED':
      return `Already believed, with the same value: ${r.belief ? belief(r.belief) : r.claimKey}`;
    case 'CONTRADICTION':
      return `Not written: ${r.claimKey} holds another ACTIVE value; contradiction ${r.contradictionId} raised for an adjudicator.`;
    case 'PREMISE_RETRACTED':
      return `Not written: a premise was retracted${r.premise ? `: ${belief(r.premise)}` : ''}. Recall again.`;
    case 'CLAIM_CHANGED':
      return `Not written: ${r.claimKey} changed since your recall${r.belief ? `; it now holds ${belief(r.belief)}` : ''}. Recall again.`;
  }
}

export function asOfText(r: Out<typeof asOfOutput>): string {
  return [
    `As of ${r.at}: ${r.totalCount} belief${r.totalCount === 1 ? '' : 's'}${r.hasNextPage ? ` (showing ${r.items.length}; next page after ${r.endCursor})` : ''}`,
    ...r.items.map((b) => `  ${belief(b)}${b.statusNow !== b.status ? ` — ${b.statusNow} now` : ''}`),
  ].join('\n');
}

export function previewText(p: Out<typeof previewOutput>): string {
  return [
    `Retracting ${p.root ? belief(p.root) : 'this belief'} would take down ${p.beliefs.totalCount} belief${p.beliefs.totalCount === 1 ? '' : 's'}:`,
    ...p.beliefs.items.map((b) => `  depth ${b.depth}: ${belief(b)}`),
    `Survivors (another justification holds): ${p.survivors.length === 0 ? 'none' : ''}`,
    ...p.survivors.map((b) => `  ${belief(b)}`),
    `Effects cancelled: ${p.pendingEffects.length}, reached while executing: ${p.executingEffects.length}, executed (owed or unreachable): ${p.executedEffects.length}`,
    ...[...p.pendingEffects, ...p.executingEffects, ...p.executedEffects].map((e) => `  ${effect(e)}`),
    ...(p.totals
      ? [
          `Would owe ${p.totals.owed.map((m) => m.formatted).join(' + ') || '0'}; unreachable ${p.totals.unreachableAmount.map((m) => m.formatted).join(' + ') || '0'}`,
        ]
      : []),
    'Nothing was changed.',
  ].join('\n');
}

export function proposeText(r: Out<typeof proposeEffectOutput>): string {
  if (r.outcome === 'PREMISE_RETRACTED')
    return `Not proposed: a support was retracted${r.premise ? `: ${belief(r.premise)}` : ''}.`;
  return `${r.created ? 'Proposed' : 'Already proposed under this key'}: ${r.effect ? effect(r.effect) : 'the effect'}`;
}
