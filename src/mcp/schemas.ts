import { z } from 'zod';
import { LIMITS } from '../validation';

/**
 * Inputs and outputs of the receipt tools, as zod schemas: the SDK validates arguments against the
 * input shapes before a tool runs and structured results against the output shapes before they leave.
 *
 * Ids: every input id accepts either the global id the GraphQL API issues (`Belief:12` base64, as in
 * `belief(id:)`) or the plain database id, as a number (`12`) or a string (`"12"`). Every output
 * carries both: `id` (global, usable with the GraphQL API) and `dbId`.
 *
 * Every reference an answer carries to another object may be null (or absent from its list): the read
 * rule (src/mcp/visible.ts) removes what the token's scopes do not open.
 */

/** An input id: a global id or a plain numeric id, as a string or a number; the tools see a trimmed string. */
export const anyId = (what: string) =>
  z
    .union([z.string().trim().min(1).max(200), z.number().int().min(1).max(Number.MAX_SAFE_INTEGER)])
    .transform((x) => String(x).trim())
    .describe(`${what}: a global id from the tools or the GraphQL API, or the plain numeric id (number or string)`);
const page = {
  first: z.number().int().min(1).max(500).optional().describe('Page size, 1 to 500 (default 50).'),
  after: z.string().max(200).optional().describe('endCursor of the previous page.'),
};

export const getReceiptInput = {
  retractionId: anyId('The retraction (receipt)').optional(),
  beliefId: anyId('Any belief the retraction took down (its root or a dependent)').optional(),
  ...page,
};

export const explainBeliefInput = {
  beliefId: anyId('The belief').optional(),
  claimKey: z
    .string()
    .max(LIMITS.claimKeyMax)
    .optional()
    .describe('Instead of beliefId: the ACTIVE belief on this claim, else its newest belief.'),
  maxDepth: z
    .number()
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe('How far to follow justifications up and dependents down (default 6).'),
};

const OWED_STATUSES = ['OWED', 'DISPATCHED', 'FAILED'] as const;
export const listOwedReversalsInput = {
  statuses: z
    .array(z.enum(OWED_STATUSES))
    .min(1)
    .max(3)
    .optional()
    .describe('Which unsettled states to list (default all three: OWED, DISPATCHED, FAILED).'),
  ...page,
};

const SEARCH_K_MAX = 100;
export const searchBeliefsInput = {
  text: z.string().min(1).max(LIMITS.statementMax).describe("What to look for; embedded with the store's embedder."),
  k: z.number().int().min(1).max(SEARCH_K_MAX).optional().describe(`How many hits, 1 to ${SEARCH_K_MAX} (default 10).`),
  includeRetracted: z.boolean().optional().describe('Include RETRACTED beliefs (default false: ACTIVE only).'),
  claimKeyPrefix: z.string().max(LIMITS.claimKeyMax).optional().describe('Only claims whose key starts with this.'),
};

const iso = z.string().describe('ISO-8601 instant');
const isoOrNull = iso.nullable();

export const Money = z.object({
  amountMinor: z.number().int().describe('Integer minor units; capped at 2^53−1 (see amountMinorCapped)'),
  amountMinorExact: z.string().describe('Exact integer minor units as a decimal string, at any size'),
  amountMinorCapped: z
    .boolean()
    .describe('True when the exact amount is beyond 2^53−1 and amountMinor shows 2^53−1 instead'),
  currency: z.string(),
  formatted: z.string().describe('e.g. $1,240.00'),
});

/** Every output object's two ids: global (usable with the GraphQL API) and the plain database id. */
const ids = { id: z.string(), dbId: z.string() };
const AgentRef = z.object({ ...ids, name: z.string() });

export const BeliefSummary = z.object({
  ...ids,
  claimKey: z.string(),
  statement: z.string(),
  value: z.unknown(),
  status: z.enum(['ACTIVE', 'RETRACTED']),
  grounded: z.boolean().describe('True for a premise (asserted on outside evidence, no justification).'),
  evidence: z.string().nullable(),
  author: AgentRef,
  createdAt: iso,
  retractedAt: isoOrNull,
  retractionId: z.string().nullable(),
});

export const EffectSummary = z.object({
  ...ids,
  kind: z.string(),
  status: z.enum(['PENDING', 'EXECUTING', 'EXECUTED', 'CANCELLED', 'FAILED']),
  amount: Money.nullable(),
  idempotencyKey: z.string(),
  externalRef: z.string().nullable(),
  createdAt: iso,
  executedAt: isoOrNull,
  cancelledAt: isoOrNull,
  cancelledBy: z.string().nullable().describe('The retraction that cancelled it while PENDING.'),
  reversal: z.object({ id: z.string(), status: z.string() }).nullable(),
});

const ReversalSummary = z.object({
  ...ids,
  status: z.enum(['OWED', 'DISPATCHED', 'CONFIRMED', 'FAILED', 'UNREACHABLE', 'VOIDED']),
  reason: z.string().nullable(),
  amount: Money.nullable(),
  idempotencyKey: z.string(),
  providerRef: z.string().nullable().describe("Only ever set from a provider's confirmation."),
  lastError: z.string().nullable(),
  createdAt: iso,
  dispatchedAt: isoOrNull,
  confirmedAt: isoOrNull,
  effect: z
    .object({ id: z.string(), kind: z.string(), idempotencyKey: z.string(), externalRef: z.string().nullable() })
    .nullable(),
  retraction: z.object({ id: z.string(), reason: z.string() }).nullable(),
});

export const Totals = z.object({
  beliefsRetracted: z.number().int(),
  effectsCancelled: z.number().int(),
  effectsReached: z.number().int(),
  reversalsOwed: z.number().int(),
  unreachable: z.number().int(),
  exposure: z.array(Money),
  owed: z.array(Money),
  unreachableAmount: z.array(Money),
  settled: z.array(Money).describe('Confirmed by a provider. Zero until a provider reference arrives.'),
});

export const PageInfo = { totalCount: z.number().int(), hasNextPage: z.boolean(), endCursor: z.string().nullable() };

const RetractionSummary = z.object({
  ...ids,
  reason: z.string(),
  createdAt: iso,
  actor: AgentRef,
  root: BeliefSummary.nullable().describe(
    'Null when the token may not read it: a root reinstated since is ACTIVE again, open to beliefs:read only.',
  ),
});

export const getReceiptOutput = {
  retraction: RetractionSummary,
  beliefs: z
    .object({ items: z.array(BeliefSummary.extend({ depth: z.number().int() })), ...PageInfo })
    .describe('Every belief it took down, root first, then in cascade order (depth, id).'),
  cancelledEffects: z.array(EffectSummary).describe('PENDING effects it cancelled: they can never run.'),
  reachedInFlight: z
    .array(EffectSummary)
    .describe('EXECUTING effects it reached; their reversal is recorded when they complete.'),
  reversals: z.array(ReversalSummary).describe('One per EXECUTED effect it reached: OWED…CONFIRMED, or UNREACHABLE.'),
  totals: Totals,
};

const Justification = z.object({
  id: z.string(),
  beliefId: z.string().nullable(),
  holds: z.boolean().describe('True while every premise is ACTIVE.'),
  premiseIds: z.array(z.string()),
  fallenPremiseIds: z.array(z.string()),
});

export const explainBeliefOutput = {
  belief: BeliefSummary,
  lineage: z.object({
    justifications: z.array(Justification).describe('How each belief up the graph was derived; empty for premises.'),
    beliefs: z
      .array(BeliefSummary.extend({ depth: z.number().int() }))
      .describe('Premises, their premises, …; depth 1 = direct premises.'),
    truncated: z.boolean(),
  }),
  dependents: z.object({
    beliefs: z
      .array(BeliefSummary.extend({ depth: z.number().int(), via: z.array(z.string()) }))
      .describe('Beliefs citing it, then theirs; depth 1 = direct dependents.'),
    truncated: z.boolean(),
  }),
  effects: z
    .array(EffectSummary.extend({ restsOn: z.array(z.string()), direct: z.boolean() }))
    .describe('Effects resting on the belief (direct) or on one of its dependents.'),
  retraction: RetractionSummary.extend({
    depth: z.number().int().describe('Where it fell in that cascade; 0 = it was the root.'),
    why: z.string(),
  })
    .nullable()
    .describe('When RETRACTED: which retraction took it down, and why.'),
};

export const listOwedReversalsOutput = {
  items: z.array(ReversalSummary).describe('Oldest first.'),
  ...PageInfo,
  owed: z.array(Money).describe('Sum over every matching reversal (all pages), per currency.'),
};

export const searchBeliefsOutput = {
  snapshot: z.string().describe('The read point; pass it to the GraphQL assertBelief as basedOn.'),
  hits: z.array(
    z.object({ belief: BeliefSummary, score: z.number().describe('Cosine similarity, higher is nearer.') }),
  ),
};

type Out<S extends Record<string, z.ZodType>> = { [K in keyof S]: z.infer<S[K]> };
export type ReceiptOut = Out<typeof getReceiptOutput>;
export type ExplainOut = Out<typeof explainBeliefOutput>;
export type OwedOut = Out<typeof listOwedReversalsOutput>;
export type SearchOut = Out<typeof searchBeliefsOutput>;
export type BeliefOut = z.infer<typeof BeliefSummary>;
export type EffectOut = z.infer<typeof EffectSummary>;
export type ReversalOut = z.infer<typeof ReversalSummary>;
export type MoneyOut = z.infer<typeof Money>;
