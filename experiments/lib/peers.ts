/**
 * The passport story as each peer can hold it, for experiments/peers_eval.ts: what is written, and
 * what each peer is asked afterwards. Every peer is measured with the same five questions.
 */

/** The forged root, the three memories derived from it, and the unrelated customer's two memories. */
export const STORY = {
  passport: { entity: 'passport of customer 4411', type: 'document', observation: 'authentic (document check #A-77)' },
  customer: { entity: 'customer 4411', type: 'customer' },
  derived: {
    identity: 'identity verified',
    eligible: 'eligible for a refund of order 9120',
    kyc: 'KYC tier gold',
  },
  unrelated: {
    entity: 'customer 7788',
    type: 'customer',
    observations: ['prefers email over phone', 'identity verified by video call #V-12'],
  },
  /** Executed: the refund can be reversed (owed back), the card charge cannot (unreachable). Pending: the payout. */
  refund: { kind: 'refund', amountMinor: 124_000, rests: 'eligible', ref: 'bank-ref-1' },
  charge: { kind: 'card_charge', amountMinor: 8_900, rests: 'kyc', ref: 'card-ref-1' },
  payout: { kind: 'payout', amountMinor: 50_000, rests: 'identity' },
} as const;

export const EXECUTED_MINOR = STORY.refund.amountMinor + STORY.charge.amountMinor;

/** One peer's answers, each read back from the peer after the forgery was handled. */
export interface PeerResult {
  peer: string;
  how: string;
  /** Of the 3 derived memories, how many the peer still returns. */
  derivedBelieved: number;
  /** Of the 1 pending action, whether it is still live (would still run). */
  pendingLive: number;
  /** Executed money the peer names as owed back, and as unreachable (cannot be undone), in minor units. */
  owedNamedMinor: number;
  unreachableNamedMinor: number;
  /** Of the 2 unrelated memories, how many were lost. */
  unrelatedLost: number;
  writeCalls: number;
  forgeryCalls: number;
  note?: string;
}

/** Counts the calls an agent makes through one client. */
export class Calls {
  write = 0;
  forgery = 0;
  phase: 'write' | 'forgery' | 'measure' = 'write';
  count(): void {
    if (this.phase === 'write') this.write++;
    else if (this.phase === 'forgery') this.forgery++;
  }
}

/** The money a text names as owed back or unreachable, for peers whose memories are free text: any line saying so, with its amount. */
export function namedMoney(texts: readonly string[]): { owed: number; unreachable: number } {
  let owed = 0;
  let unreachable = 0;
  for (const t of texts) {
    const m = /\$([0-9,]+)\.([0-9]{2})/.exec(t);
    if (!m) continue;
    const minor = Number(m[1]!.replace(/,/g, '')) * 100 + Number(m[2]);
    if (/\b(owed|to reverse|reversal)\b/i.test(t)) owed += minor;
    else if (/\b(unreachable|cannot be undone)\b/i.test(t)) unreachable += minor;
  }
  return { owed, unreachable };
}
