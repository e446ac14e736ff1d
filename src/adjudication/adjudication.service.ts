import { pausePoint } from '../store/pause';
import type { Actor, Core } from '../core';
import type { Adjudicator, AdjudicationCase, Verdict } from './adjudicator';
import { agentNames } from '../agent/agent.repository';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { activeBeliefForClaim, lockBeliefs } from '../belief/belief.repository';
import { lockClaim } from '../belief/claim.repository';
import { insertBelief } from '../belief/belief.service';
import { retractInTx } from '../retraction/retraction.service';
import { resumeBlocked } from '../reinstatement/reinstatement.service';
import { type Tx, writeTx } from '../store/tx';
import * as v from '../validation';
import {
  type ContradictionRow,
  leaseHolds,
  liveLease,
  lockContradiction as lockRow,
  releaseLease,
  takeLease as takeLeaseRow,
  updateContradiction,
} from '../contradiction/contradiction.repository';

/**
 * Deciding contradictions: the claim's fenced adjudication lease, the adjudicator's call outside any transaction,
 * and the verdict. It sits above the lifecycles a verdict drives — ACCEPT_PROPOSED retracts the existing belief
 * (retraction/), writes the proposal (belief/) or completes the reinstatement the contradiction blocks
 * (reinstatement/) — while the contradictions themselves (contradiction/contradiction.repository.ts) sit below
 * them all, raised by a turn and by a reinstatement.
 */

export interface Lease {
  contradictionId: string;
  claimKey: string;
  holder: string;
  fencingToken: string;
  expiresAt: Date;
}

const DEFAULT_LEASE_MS = Number(process.env.RETRACT_ADJUDICATION_LEASE_MS ?? 60_000);

async function lockContradiction(tx: Tx, fleet: string, id: string): Promise<ContradictionRow> {
  const c = await lockRow(tx, fleet, id);
  if (!c) throw notFound('contradiction', id);
  return c;
}

/**
 * Takes the claim's adjudication lease in a short transaction: a new fencing token from a
 * sequence, an expiry, the holder's name; the contradiction becomes ADJUDICATING. A live lease held
 * by anyone is a CONFLICT, so a second caller never triggers a second model call.
 */
export async function takeLease(
  core: Core,
  actor: Actor,
  contradictionId: string,
  holder: string,
  leaseMs = DEFAULT_LEASE_MS,
): Promise<{ lease: Lease; input: AdjudicationCase }> {
  return writeTx(core.store, actor.fleet, async (tx) => {
    const c = await lockContradiction(tx, actor.fleet, contradictionId);
    if (c.status === 'RESOLVED')
      throw new DomainError('CONFLICT', `contradiction ${contradictionId} is already resolved (${c.verdict})`);
    await pausePoint('adjudicate:contradiction-locked');
    const live = await liveLease(tx, actor.fleet, c.claim_key);
    if (live)
      throw new DomainError(
        'CONFLICT',
        `claim ${c.claim_key} is being adjudicated by ${live.holder} until ${live.expires_at.toISOString()}`,
      );
    const l = await takeLeaseRow(tx, actor.fleet, { claimKey: c.claim_key, contradictionId: c.id, holder, leaseMs });
    await updateContradiction(tx, actor.fleet, c.id, { status: 'ADJUDICATING' });
    const [existing] = await lockBeliefs(tx, actor.fleet, [c.existing_id], 'share');
    const authors = await agentNames(tx, actor.fleet, [existing!.author_id, c.proposed_author_id]);
    const nameOf = (id: string) => authors.get(id) ?? `agent ${id}`;
    return {
      lease: {
        contradictionId: c.id,
        claimKey: c.claim_key,
        holder,
        fencingToken: l.fencing_token,
        expiresAt: l.expires_at,
      },
      input: {
        claimKey: c.claim_key,
        existing: {
          statement: existing!.statement,
          value: existing!.value,
          evidence: existing!.evidence,
          author: nameOf(existing!.author_id),
          at: existing!.created_at.toISOString(),
        },
        proposed: {
          statement: c.proposed_statement,
          value: c.proposed_value,
          evidence: c.proposed_evidence,
          author: nameOf(c.proposed_author_id),
          at: c.created_at.toISOString(),
        },
      },
    };
  });
}

/** Applies a verdict inside the caller's transaction (lease already checked, or none needed). */
async function applyVerdict(
  tx: Tx,
  actor: Actor,
  c: ContradictionRow,
  verdict: Verdict,
  rationale: string,
  adjudicator: string,
  vector: string | null,
): Promise<void> {
  if (verdict === 'ESCALATE') {
    await updateContradiction(tx, actor.fleet, c.id, { status: 'OPEN', verdict, rationale, adjudicator });
    await resolvedEvent(tx, actor, c, verdict);
    return;
  }
  let resolution: string | null = null;
  let accepted: string | null = null;
  if (verdict === 'ACCEPT_PROPOSED') {
    await lockClaim(tx, actor.fleet, c.claim_key);
    const [existing] = await lockBeliefs(tx, actor.fleet, [c.existing_id], 'update');
    if (existing!.status === 'ACTIVE') {
      resolution = (
        await retractInTx(
          tx,
          actor,
          c.existing_id,
          `contradiction ${c.id}: the proposal was accepted (${rationale.slice(0, 200)})`,
        )
      ).retractionId;
    } else {
      resolution = existing!.retraction_id;
    }
    // A contradiction that blocks a reinstatement: accepting it brings the retracted root back itself.
    accepted = await resumeBlocked(tx, actor, c);
  }
  if (verdict === 'ACCEPT_PROPOSED' && !accepted) {
    if (!vector) throw new Error("ACCEPT_PROPOSED needs the proposal's embedding");
    const current = await activeBeliefForClaim(tx, actor.fleet, c.claim_key);
    if (current)
      throw new DomainError(
        'CONFLICT',
        `claim ${c.claim_key} already holds another ACTIVE belief (${current.id}); raise a new contradiction`,
      );
    const premises = await lockBeliefs(tx, actor.fleet, c.proposed_derived_from, 'share');
    const fallen = premises.find((p) => p.status !== 'ACTIVE');
    if (fallen)
      throw new DomainError(
        'CONFLICT',
        `the proposal rests on belief ${fallen.id}, which has been retracted; it cannot be accepted`,
      );
    const b = await insertBelief(
      tx,
      { fleet: actor.fleet, agentId: c.proposed_author_id },
      {
        claimKey: c.claim_key,
        statement: c.proposed_statement,
        value: c.proposed_value === null || c.proposed_value === undefined ? null : JSON.stringify(c.proposed_value),
        evidence: c.proposed_evidence,
        derivedFrom: c.proposed_derived_from,
        vector,
      },
    );
    accepted = b.id;
  }
  await updateContradiction(tx, actor.fleet, c.id, {
    status: 'RESOLVED',
    verdict,
    rationale,
    adjudicator,
    resolution_id: resolution,
    accepted_id: accepted,
    resolved_at: new Date(),
  });
  await resolvedEvent(tx, actor, c, verdict);
}

/** The ContradictionResolved row of a verdict (ESCALATE too: the contradiction was looked at, and stays OPEN). */
async function resolvedEvent(tx: Tx, actor: Actor, c: ContradictionRow, verdict: Verdict): Promise<void> {
  await appendEvent(tx, {
    fleet: actor.fleet,
    type: 'ContradictionResolved',
    actorId: actor.agentId,
    ids: [c.id],
    data: { verdict },
  });
}

async function proposalVector(core: Core, c: { proposed_statement: string }): Promise<string> {
  const [e] = await core.embedder.embed([c.proposed_statement]);
  return `[${e!.join(',')}]`;
}

/**
 * Commits a verdict only while `lease` is the claim's current, unexpired lease (fencing token
 * matches); otherwise CONFLICT and nothing changes. ACCEPT_PROPOSED retracts the existing belief
 * with its full cascade and writes the proposal ACTIVE in the same transaction.
 */
export async function commitVerdict(
  core: Core,
  actor: Actor,
  lease: Lease,
  result: { verdict: Verdict; rationale: string },
  adjudicatorId: string,
): Promise<void> {
  const vector =
    result.verdict === 'ACCEPT_PROPOSED'
      ? await proposalVector(core, await contradictionRow(core, actor, lease.contradictionId))
      : null;
  await writeTx(core.store, actor.fleet, async (tx) => {
    if (!(await leaseHolds(tx, actor.fleet, lease.claimKey, lease.fencingToken))) {
      throw new DomainError(
        'CONFLICT',
        `the adjudication lease on ${lease.claimKey} (token ${lease.fencingToken}) expired or was taken over; the verdict was rejected`,
      );
    }
    const c = await lockContradiction(tx, actor.fleet, lease.contradictionId);
    await applyVerdict(tx, actor, c, result.verdict, result.rationale, adjudicatorId, vector);
    await releaseLease(tx, actor.fleet, lease.claimKey, lease.fencingToken);
  });
}

async function contradictionRow(core: Core, actor: Actor, id: string): Promise<ContradictionRow> {
  return writeTx(core.store, actor.fleet, (tx) => lockContradiction(tx, actor.fleet, id));
}

/**
 * Runs the adjudicator under the claim's lease: lease (short transaction), model call (no
 * transaction open), fenced commit. A timeout or model failure comes back from the adjudicator as
 * ESCALATE, which leaves the contradiction OPEN for resolveContradiction.
 */
export async function adjudicateContradiction(
  core: Core,
  actor: Actor,
  adjudicator: Adjudicator,
  contradictionId: string,
  opts: { holder?: string; leaseMs?: number; timeoutMs?: number } = {},
): Promise<string> {
  const id = v.id('contradictionId', contradictionId);
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const { lease, input } = await takeLease(core, actor, id, opts.holder ?? `agent:${actor.agentId}`, leaseMs);
  const signal = AbortSignal.timeout(Math.max(1, Math.min(opts.timeoutMs ?? leaseMs - 1000, leaseMs - 100)));
  const result = await adjudicator.adjudicate(input, { signal });
  await commitVerdict(core, actor, lease, result, adjudicator.id);
  return id;
}

/** An agent's own verdict (KEEP_EXISTING or ACCEPT_PROPOSED); refused while a live lease holds the claim. */
export async function resolveContradiction(
  core: Core,
  actor: Actor,
  agentName: string,
  input: { contradictionId: string; verdict: Verdict; rationale: string },
): Promise<string> {
  const id = v.id('contradictionId', input.contradictionId);
  if (input.verdict !== 'KEEP_EXISTING' && input.verdict !== 'ACCEPT_PROPOSED')
    throw badInput('verdict', 'must be KEEP_EXISTING or ACCEPT_PROPOSED');
  const rationale = v.text('rationale', input.rationale, v.LIMITS.reasonMax, { multiline: true });
  const row = await contradictionRow(core, actor, id);
  const vector = input.verdict === 'ACCEPT_PROPOSED' ? await proposalVector(core, row) : null;
  await writeTx(core.store, actor.fleet, async (tx) => {
    const c = await lockContradiction(tx, actor.fleet, id);
    if (c.status === 'RESOLVED')
      throw new DomainError('CONFLICT', `contradiction ${id} is already resolved (${c.verdict})`);
    const live = await liveLease(tx, actor.fleet, c.claim_key);
    if (live) throw new DomainError('CONFLICT', `claim ${c.claim_key} is being adjudicated by ${live.holder}`);
    await applyVerdict(tx, actor, c, input.verdict, rationale, `agent:${agentName}`, vector);
  });
  return id;
}
