import { mayRead } from '../../agent/access';
import { assertBelief } from '../../belief/belief.service';
import type { Core } from '../../core';
import { proposeEffect } from '../../effect/effect.service';
import { gid } from '../../kernel/ids';
import { reinstateRetraction } from '../../reinstatement/reinstatement.service';
import { type Preview, previewRetraction, retractBelief } from '../../retraction/retraction.service';
import { withRole } from '../../store/tx';
import { explainBelief } from '../explain';
import { beliefsAsOf, beliefsById, effectsById } from '../memory-read';
import { readerTx } from '../reader';
import { getReceipt, parseAnyId, totalsOut } from '../receipts';
import { getReinstatement, reinstatementText } from '../reinstatement';
import { searchNearest } from '../search';
import { explainText, receiptText, searchText } from '../text';
import type { Toolkit } from '../toolkit';
import type { Tx } from '../../store/tx';
import type { ReceiptOut } from '../schemas';
import {
  asOfInput,
  asOfOutput,
  previewInput,
  previewOutput,
  proposeEffectInput,
  proposeEffectOutput,
  recallInput,
  reinstateInput,
  reinstateOutput,
  rememberInput,
  rememberOutput,
  retractInput,
  retractOutput,
  whyInput,
} from './memory-schemas';
import { asOfText, previewText, proposeText, rememberText } from './memory-text';
import { explainBeliefOutput, searchBeliefsOutput } from '../schemas';

/**
 * The memory tools: what an agent needs to use RETRACT as its memory over MCP. Each calls the service
 * its GraphQL twin calls (assertBelief, search, explain, previewRetraction, retractBelief,
 * reinstateRetraction, beliefs(asOf:), proposeEffect) — no rule of its own — and is listed only for a
 * token holding that twin's scope (src/mcp/access.ts). Writes run as `retract_mcp` (0012_mcp_writer:
 * it may write only the tables these services write); reads through the reader path. A write tool
 * grants its own result, as a GraphQL mutation does; everything else it answers follows the read
 * rule (src/mcp/visible.ts).
 */

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

export function registerMemoryTools(kit: Toolkit): void {
  const { deps, fleet } = kit;
  const core: Core = { store: withRole(deps.store, 'retract_mcp'), embedder: deps.embedder };
  const read = <T>(fn: Parameters<typeof readerTx<T>>[2]) => readerTx(deps.store, fleet, fn);

  kit.tool(
    'remember',
    {
      title: 'Remember a belief',
      description:
        'Asserts a belief on a claim with its evidence, optionally derived from other ACTIVE beliefs (its premises): retracting a premise ' +
        'later takes this belief down with it. One ACTIVE belief per claim: the same value corroborates, a different one raises a ' +
        "contradiction and writes nothing. Pass basedOn (a recall's snapshot) to be refused if the claim changed since you read it.",
      inputSchema: rememberInput,
      outputSchema: rememberOutput,
      // Not idempotent: asserting the same premise set again is CORROBORATED, but a new derivedFrom adds a justification.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async (a, grants) => {
      const derivedFrom = (a.derivedFrom ?? []).map((id, i) => parseAnyId(`derivedFrom[${i}]`, id, 'Belief'));
      const r = await assertBelief(core, kit.actor, { ...a, derivedFrom });
      // As assertBelief's resolver: the caller's own belief (or the one that already says the same) and the contradiction it raised.
      if (r.kind === 'asserted' || r.kind === 'corroborated') grants.grant('Belief', r.belief.id);
      if (r.kind === 'contradiction') grants.grant('Contradiction', r.contradictionId);
      const one = async (id: string | undefined) =>
        id ? ((await read((tx) => beliefsById(tx, fleet, [id])))[0] ?? null) : null;
      const outcome = (
        {
          asserted: 'ASSERTED',
          corroborated: 'CORROBORATED',
          contradiction: 'CONTRADICTION',
          premiseRetracted: 'PREMISE_RETRACTED',
          claimChanged: 'CLAIM_CHANGED',
        } as const
      )[r.kind];
      return {
        outcome,
        claimKey:
          r.kind === 'asserted' || r.kind === 'corroborated'
            ? r.belief.claim_key
            : r.kind === 'premiseRetracted'
              ? r.premise.claim_key
              : r.kind === 'claimChanged'
                ? r.claimKey
                : a.claimKey.normalize('NFC'),
        belief: await one(
          r.kind === 'asserted' || r.kind === 'corroborated'
            ? r.belief.id
            : r.kind === 'claimChanged'
              ? r.current?.id
              : undefined,
        ),
        contradictionId: r.kind === 'contradiction' ? gid('Contradiction', r.contradictionId) : null,
        premise: await one(r.kind === 'premiseRetracted' ? r.premise.id : undefined),
      };
    },
    rememberText,
  );

  kit.tool(
    'recall',
    {
      title: 'Recall beliefs',
      description:
        'The beliefs nearest to a text (embedding similarity), ACTIVE only unless includeRetracted, and the snapshot to pass to remember ' +
        'as basedOn. Similarity is closeness of meaning, never identity: claim keys decide what a belief is about.',
      inputSchema: recallInput,
      outputSchema: searchBeliefsOutput,
      annotations: READ,
    },
    (a) => searchNearest(deps, fleet, a),
    searchText,
  );

  kit.tool(
    'why',
    {
      title: 'Why is this believed?',
      description:
        'Explains a belief: its justifications down to the premises (outside evidence) it rests on, which hold and which premises fell; the beliefs ' +
        "built on it; and, as the token's scopes allow, the effects resting on them and the retraction that took it down. By beliefId or claimKey.",
      inputSchema: whyInput,
      outputSchema: explainBeliefOutput,
      annotations: READ,
    },
    (a) => read((tx) => explainBelief(tx, fleet, a)),
    explainText,
  );

  kit.tool(
    'as_of',
    {
      title: 'What did the fleet believe then?',
      description:
        'The beliefs of the fleet as they stood at an instant: each with its status, retractedAt and retraction then (statusNow says where it ' +
        'stands today), newest first, paged; filter by claim-key prefix, status then, or ids. Also shows what a later retraction took back.',
      inputSchema: asOfInput,
      outputSchema: asOfOutput,
      annotations: READ,
    },
    (a) => read((tx) => beliefsAsOf(tx, fleet, a)),
    asOfText,
  );

  kit.tool(
    'preview_retraction',
    {
      title: 'Preview a retraction',
      description:
        'What retracting a belief would do, computed by running the very cascade in a transaction that is rolled back: the beliefs that ' +
        'would fall (cascade order), the dependents that survive on another justification, the effects cancelled or reached, and the ' +
        "receipt's figures (with receipts:read). Changes nothing.",
      inputSchema: previewInput,
      outputSchema: previewOutput,
      // Rolled back: nothing persists, so read-only to the world.
      annotations: READ,
    },
    async (a) => {
      const p = await previewRetraction(core, kit.actor, {
        beliefId: parseAnyId('beliefId', a.beliefId, 'Belief'),
        first: a.first,
        after: a.after ?? null,
      });
      return read((tx) => previewOut(tx, fleet, p, mayRead(kit.agent, 'Receipt')));
    },
    previewText,
  );

  kit.tool(
    'retract',
    {
      title: 'Retract a belief',
      description:
        'Takes a belief back with everything built on it, in one transaction: dependents with no other standing justification fall, PENDING ' +
        'effects resting on any of them are cancelled, EXECUTED ones are owed a reversal (or named unreachable). Returns the receipt. ' +
        'Retracting an already retracted belief returns its original receipt and writes nothing. reinstate takes it back.',
      inputSchema: retractInput,
      outputSchema: retractOutput,
      // Destructive (it takes beliefs down and cancels effects); idempotent (a second call returns the first receipt).
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (a, grants) => {
      const { retractionId, created } = await retractBelief(core, kit.actor, {
        beliefId: parseAnyId('beliefId', a.beliefId, 'Belief'),
        reason: a.reason,
      });
      grants.grant('Retraction', retractionId);
      return {
        alreadyRetracted: !created,
        ...(await read((tx) =>
          getReceipt(tx, fleet, { retractionId }, { mayReadActive: mayRead(kit.agent, 'Belief') }),
        )),
      };
    },
    (r) => `${r.alreadyRetracted ? 'Already retracted: its original receipt.\n' : ''}${receiptText(r)}`,
  );

  kit.tool(
    'reinstate',
    {
      title: 'Reinstate a retraction',
      description:
        'Takes a retraction back when it proved wrong: its root and every belief that fell with it and is justified again return ACTIVE; ' +
        'reversals not yet sent are VOIDED, confirmed ones named re-execution owed; cancelled effects become restorable. BLOCKED (a ' +
        "contradiction raised, nothing else changed) when the root's claim holds another ACTIVE belief. Asking again returns the first receipt.",
      inputSchema: reinstateInput,
      outputSchema: reinstateOutput,
      // Not destructive: it adds back what was taken down (and voids money not yet sent); idempotent.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (a, grants) => {
      const r = await reinstateRetraction(core, kit.actor, {
        retractionId: parseAnyId('retractionId', a.retractionId, 'Retraction'),
        reason: a.reason,
      });
      grants.grant('Reinstatement', r.reinstatementId);
      if (r.kind === 'blocked') grants.grant('Contradiction', r.contradictionId);
      const receipt = await read((tx) => getReinstatement(tx, fleet, { reinstatementId: r.reinstatementId }));
      return {
        outcome: r.kind === 'blocked' ? ('BLOCKED' as const) : ('REINSTATED' as const),
        alreadyReinstated: !r.created,
        ...receipt,
      };
    },
    (r) => `${r.alreadyReinstated ? 'Already asked: the first receipt.\n' : ''}${reinstatementText(r)}`,
  );

  kit.tool(
    'propose_effect',
    {
      title: 'Propose an effect',
      description:
        'Records an action (a refund, a charge, a payout) as PENDING, resting on ACTIVE beliefs: if any of them is retracted before it ' +
        'runs it is cancelled, after it ran its reversal is owed. An executor with effects:execute runs it. Safe to repeat under the same idempotencyKey.',
      inputSchema: proposeEffectInput,
      outputSchema: proposeEffectOutput,
      // Idempotent under its key; it moves no money itself (an executor does), and names no system outside RETRACT.
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async (a, grants) => {
      const supportedBy = a.supportedBy.map((id, i) => parseAnyId(`supportedBy[${i}]`, id, 'Belief'));
      const r = await proposeEffect(core, kit.actor, { ...a, amount: a.amount ?? null, supportedBy });
      if (r.kind === 'proposed') grants.grant('Effect', r.effect.id);
      return r.kind === 'proposed'
        ? {
            outcome: 'PROPOSED' as const,
            created: r.created,
            effect: (await read((tx) => effectsById(tx, fleet, [r.effect.id])))[0] ?? null,
            premise: null,
          }
        : {
            outcome: 'PREMISE_RETRACTED' as const,
            created: false,
            effect: null,
            premise: (await read((tx) => beliefsById(tx, fleet, [r.premise.id])))[0] ?? null,
          };
    },
    proposeText,
  );
}

/** A retraction preview (ids, as the service computes it) as the tool answers it; totals only when `withTotals`. */
async function previewOut(tx: Tx, fleet: string, p: Preview, withTotals: boolean) {
  const depth = new Map(p.beliefs.items.map((b) => [b.id, b.depth]));
  const [root] = await beliefsById(tx, fleet, [p.rootId]);
  return {
    root: root ?? null,
    beliefs: {
      items: (
        await beliefsById(
          tx,
          fleet,
          p.beliefs.items.map((b) => b.id),
        )
      ).map((b) => ({ ...b, depth: depth.get(b.dbId)! })),
      totalCount: p.beliefs.totalCount,
      hasNextPage: p.beliefs.hasNextPage,
      endCursor: p.beliefs.endCursor,
    },
    survivors: await beliefsById(tx, fleet, p.survivors),
    pendingEffects: await effectsById(tx, fleet, p.pendingEffects),
    executingEffects: await effectsById(tx, fleet, p.executingEffects),
    executedEffects: await effectsById(tx, fleet, p.executedEffects),
    totals: withTotals ? totalsOut(p.totals) : (null as ReceiptOut['totals'] | null),
  };
}
