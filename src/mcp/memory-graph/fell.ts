import { readReceipt } from '../../retraction/receipt';
import type { Tx } from '../../store/tx';
import { formatMoney } from '../format';
import { parseKey } from './claim-keys';

/** Most fallen beliefs one summary lists (the receipt tools page through any more). */
const LISTED = 500;

interface FellBelief {
  beliefId: string;
  claimKey: string;
  /** 0 for what was deleted, 1 for what rested on it, and so on. */
  depth: number;
  statement: string;
  /** What the belief was in the memory graph, when it was one of its beliefs (another agent may have derived any belief from it). */
  memory:
    | { entity: string }
    | { entityName: string; observation: string }
    | { from: string; relationType: string; to: string }
    | null;
}
interface MoneyLine {
  effectId: string;
  kind: string;
  amount: string | null;
  status: string;
}
export interface RetractionSummary {
  retractionId: string;
  fell: FellBelief[];
  /** How many beliefs fell in all (fell lists the first 500). */
  fellCount: number;
  /** Actions not yet taken that rested on what fell: cancelled, they will not run. */
  cancelledEffects: MoneyLine[];
  /** Actions running when it fell: the executor is told, and a reversal is owed if they complete. */
  reachedInFlight: MoneyLine[];
  /** Actions already taken: what is owed back (OWED, to dispatch) or cannot be undone (UNREACHABLE). */
  reversals: MoneyLine[];
  owed: string[];
  unreachable: string[];
}

const str = (v: unknown, k: string) => String((v as Record<string, unknown> | null)?.[k] ?? '');
const amount = (m: { amount_minor: string | null; currency: string | null }) =>
  m.amount_minor != null && m.currency ? formatMoney(m.amount_minor, m.currency) : null;

/** What one retraction took down and what it did to actions, from its receipt (src/retraction/receipt.ts), for a delete tool's answer. */
export async function summarizeRetraction(tx: Tx, fleet: string, retractionId: string): Promise<RetractionSummary> {
  const r = await readReceipt(tx, fleet, retractionId, LISTED, null);
  if (!r) throw new Error(`retraction ${retractionId} is not readable in fleet ${fleet}`);
  const fell = r.beliefs.items.map((b): FellBelief => {
    const k = parseKey(b.claim_key);
    const memory =
      k?.kind === 'entity'
        ? { entity: k.name }
        : k?.kind === 'observation'
          ? { entityName: k.entityName, observation: str(b.value, 'content') }
          : k?.kind === 'relation'
            ? { from: k.from, relationType: k.relationType, to: k.to }
            : null;
    return { beliefId: b.id, claimKey: b.claim_key, depth: b.depth, statement: b.statement, memory };
  });
  const line = (e: {
    id: string;
    kind: string;
    amount_minor: string | null;
    currency: string | null;
    status: string;
  }): MoneyLine => ({ effectId: e.id, kind: e.kind, amount: amount(e), status: e.status });
  return {
    retractionId,
    fell,
    fellCount: r.beliefs.totalCount,
    cancelledEffects: r.cancelledEffects.map(line),
    reachedInFlight: r.reachedInFlight.map(line),
    reversals: r.reversals.map((x) => ({
      ...line({ ...r.effects.get(x.effect_id)!, status: x.status }),
      amount: amount(x),
    })),
    owed: r.totals.owed.map((m) => formatMoney(m.amountMinor, m.currency)),
    unreachable: r.totals.unreachableAmount.map((m) => formatMoney(m.amountMinor, m.currency)),
  };
}

/** The text a delete tool adds after the reference's message: one line per retraction. */
export function fellText(list: readonly RetractionSummary[]): string {
  if (list.length === 0) return 'RETRACT: nothing was retracted (no such memory is believed now).';
  return list
    .map((s) => {
      const root = s.fell.find((f) => f.depth === 0);
      const others = s.fell.filter((f) => f.depth > 0).map((f) => f.statement);
      const parts = [`RETRACT retraction ${s.retractionId}: retracted ${root?.statement ?? 'the memory'}`];
      parts.push(
        others.length
          ? `and with it ${s.fellCount - 1} memor${s.fellCount - 1 === 1 ? 'y' : 'ies'} resting on it: ${others.join('; ')}`
          : 'nothing else rested on it',
      );
      if (s.cancelledEffects.length)
        parts.push(`cancelled ${s.cancelledEffects.map((e) => `${e.kind} ${e.amount ?? ''}`.trim()).join(', ')}`);
      if (s.reachedInFlight.length)
        parts.push(
          `reached in flight ${s.reachedInFlight.map((e) => `${e.kind} ${e.amount ?? ''}`.trim()).join(', ')}`,
        );
      if (s.owed.length) parts.push(`owed back ${s.owed.join(' + ')}`);
      if (s.unreachable.length) parts.push(`unreachable (cannot be undone) ${s.unreachable.join(' + ')}`);
      return `${parts.join('; ')}.`;
    })
    .join('\n');
}
