import { z } from 'zod';
import { LIMITS } from '../../validation';
import {
  BeliefSummary,
  EffectSummary,
  PageInfo,
  Totals,
  anyId,
  explainBeliefInput,
  getReceiptOutput,
  searchBeliefsInput,
} from '../schemas';
import { getReinstatementOutput } from '../reinstatement';

/**
 * Inputs and outputs of the memory tools (src/mcp/write/memory-tools.ts). Each mirrors its GraphQL
 * twin's input; outputs reuse the receipt tools' shapes, so a belief, an effect or a receipt reads the
 * same whichever tool answered.
 */

const reason = (what: string) => z.string().min(1).max(LIMITS.reasonMax).describe(what);

export const rememberInput = {
  claimKey: z
    .string()
    .min(1)
    .max(LIMITS.claimKeyMax)
    .describe('What the belief is about, e.g. customer:4411/passport.authentic. At most one ACTIVE belief per claim.'),
  statement: z.string().min(1).max(LIMITS.statementMax).describe('The assertion in words (what recall searches).'),
  value: z
    .unknown()
    .optional()
    .describe('The asserted value (any JSON); two beliefs on a claim agree when their values are equal.'),
  evidence: z
    .string()
    .max(LIMITS.evidenceMax)
    .optional()
    .describe('Outside evidence for it: makes it a premise when derivedFrom is empty.'),
  derivedFrom: z
    .array(anyId('A premise'))
    .max(LIMITS.premisesMax)
    .optional()
    .describe(
      'The ACTIVE beliefs it was derived from (one justification): retracting any of them takes this one down too.',
    ),
  basedOn: z
    .string()
    .max(400)
    .optional()
    .describe('The snapshot a recall returned: refused (CLAIM_CHANGED) if the claim was written since.'),
};

const OUTCOMES = ['ASSERTED', 'CORROBORATED', 'CONTRADICTION', 'PREMISE_RETRACTED', 'CLAIM_CHANGED'] as const;
export const rememberOutput = {
  outcome: z
    .enum(OUTCOMES)
    .describe(
      'ASSERTED: written ACTIVE. CORROBORATED: the claim already holds this value. CONTRADICTION: it holds another value; nothing written. PREMISE_RETRACTED: a premise fell; nothing written. CLAIM_CHANGED: written since basedOn; nothing written.',
    ),
  claimKey: z.string(),
  belief: BeliefSummary.nullable().describe(
    'ASSERTED/CORROBORATED: the belief that holds; CLAIM_CHANGED: what the claim holds now (if readable).',
  ),
  contradictionId: z.string().nullable().describe('CONTRADICTION: the contradiction raised, for an adjudicator.'),
  premise: BeliefSummary.nullable().describe('PREMISE_RETRACTED: the premise that fell (if readable).'),
};

export const recallInput = searchBeliefsInput;

export const whyInput = explainBeliefInput;

export const asOfInput = {
  at: z
    .string()
    .min(1)
    .max(40)
    .describe(
      'The instant, RFC 3339 with a zone (e.g. 2026-12-07T08:00:00Z), years 0001 to 9999: every change dated at or before it counts.',
    ),
  claimKeyPrefix: z.string().max(LIMITS.claimKeyMax).optional().describe('Only claims whose key starts with this.'),
  status: z.enum(['ACTIVE', 'RETRACTED']).optional().describe('Only beliefs in this status at that instant.'),
  ids: z.array(anyId('A belief')).max(500).optional().describe('Only these beliefs.'),
  first: z.number().int().min(1).max(500).optional().describe('Page size, 1 to 500 (default 50).'),
  after: z.string().max(200).optional().describe('endCursor of the previous page.'),
};

export const asOfOutput = {
  at: z.string().describe('The instant read, ISO-8601.'),
  items: z
    .array(BeliefSummary.extend({ statusNow: z.enum(['ACTIVE', 'RETRACTED']) }))
    .describe(
      'Beliefs that existed then, newest first, each with status, retractedAt and retractionId as they stood at `at`.',
    ),
  ...PageInfo,
};

export const previewInput = {
  beliefId: anyId('The belief that would be retracted'),
  first: z
    .number()
    .int()
    .min(1)
    .max(500)
    .optional()
    .describe('Page size of the beliefs that would fall, 1 to 500 (default 50).'),
  after: z.string().max(200).optional().describe('endCursor of the previous page.'),
};

export const previewOutput = {
  root: BeliefSummary.nullable(),
  beliefs: z
    .object({ items: z.array(BeliefSummary.extend({ depth: z.number().int() })), ...PageInfo })
    .describe('Every belief that would fall, root first, then in cascade order.'),
  survivors: z.array(BeliefSummary).describe('Dependents that would stay ACTIVE: another justification still holds.'),
  pendingEffects: z.array(EffectSummary).describe('PENDING effects that would be cancelled.'),
  executingEffects: z.array(EffectSummary).describe('EXECUTING effects that would be reached.'),
  executedEffects: z.array(EffectSummary).describe('EXECUTED effects that would be owed a reversal, or unreachable.'),
  totals: Totals.nullable().describe("The receipt's figures as they would be; needs receipts:read, as in GraphQL."),
};

export const retractInput = {
  beliefId: anyId('The belief that turned out false'),
  reason: reason('Why (kept on the receipt).'),
};
export const retractOutput = {
  alreadyRetracted: z
    .boolean()
    .describe('True when it was already retracted: this is its original receipt, and nothing was written.'),
  ...getReceiptOutput,
};

export const reinstateInput = {
  retractionId: anyId('The retraction to take back'),
  reason: reason('Why the retraction was wrong (kept on the receipt).'),
};
export const reinstateOutput = {
  outcome: z
    .enum(['REINSTATED', 'BLOCKED'])
    .describe(
      "BLOCKED: the root's claim holds another ACTIVE belief; a contradiction was raised and nothing else changed.",
    ),
  alreadyReinstated: z
    .boolean()
    .describe('True when it had been asked before: this is the first receipt, and nothing was written.'),
  ...getReinstatementOutput,
};

export const proposeEffectInput = {
  kind: z.string().min(1).max(64).describe('A registered effect kind, e.g. refund.'),
  amount: z
    .object({
      amountMinor: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('Positive integer minor units.'),
      currency: z.string().min(3).max(3).describe('ISO 4217 code in capitals, e.g. USD.'),
    })
    .optional()
    .describe('Money it moves, if any.'),
  payload: z.unknown().optional().describe('What the executor needs (any JSON).'),
  supportedBy: z
    .array(anyId('A belief it rests on'))
    .min(1)
    .max(LIMITS.premisesMax)
    .describe(
      'The ACTIVE beliefs it rests on: retracting any of them cancels it (or, once executed, owes its reversal).',
    ),
  idempotencyKey: z
    .string()
    .min(1)
    .max(200)
    .describe(
      'Your key: proposing the same effect again under it returns the first; a different effect under it is a CONFLICT.',
    ),
};
export const proposeEffectOutput = {
  outcome: z.enum(['PROPOSED', 'PREMISE_RETRACTED']),
  created: z.boolean().describe('False when the key named an effect already: that one is returned.'),
  effect: EffectSummary.nullable(),
  premise: BeliefSummary.nullable().describe('PREMISE_RETRACTED: the support that fell (if readable).'),
};
