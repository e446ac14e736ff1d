import { sql } from 'kysely';
import { pausePoint } from '../store/pause';
import type { Actor, Core } from '../core';
import type { Adjudicator, AdjudicationCase, Verdict } from '../adjudication/adjudicator';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { activeBeliefForClaim, lockBeliefs, lockClaim } from '../belief/belief.repository';
import { insertBelief } from '../belief/belief.service';
import { retractInTx } from '../retraction/retraction.service';
import { resumeBlocked } from '../reinstatement/reinstatement.service';
import { type Tx, writeTx } from '../store/tx';
import * as v from '../validation';

export interface ContradictionRow {
  id: string;
  fleet_id: string;
  claim_key: string;
  existing_id: string;
  proposed_statement: string;
  proposed_value: unknown;
  proposed_evidence: string | null;
  proposed_author_id: string;
  proposed_derived_from: string[];
  status: 'OPEN' | 'ADJUDICATING' | 'RESOLVED';
  verdict: Verdict | null;
  rationale: string | null;
  adjudicator: string | null;
  resolution_id: string | null;
  accepted_id: string | null;
  created_at: Date;
  resolved_at: Date | null;
  reinstatement_id: string | null;
  reinstates_id: string | null;
}

export interface Lease {
  contradictionId: string;
  claimKey: string;
  holder: string;
  fencingToken: string;
  expiresAt: Date;
}

const DEFAULT_LEASE_MS = Number(process.env.RETRACT_ADJUDICATION_LEASE_MS ?? 60_000);

async function lockContradiction(tx: Tx, id: string): Promise<ContradictionRow> {
  const c = (await tx.selectFrom('contradictions').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()) as ContradictionRow | undefined;
  if (!c) throw notFound('contradiction', id);
  return c;
}

/**
 * Takes the claim's adjudication lease in a short transaction: a new fencing token from a
 * sequence, an expiry, the holder's name; the contradiction becomes ADJUDICATING. A live lease held
 * by anyone is a CONFLICT, so a second caller never triggers a second model call.
 */
export async function takeLease(core: Core, actor: Actor, contradictionId: string, holder: string, leaseMs = DEFAULT_LEASE_MS): Promise<{ lease: Lease; input: AdjudicationCase }> {
  return writeTx(core.store, actor.fleet, async (tx) => {
    const c = await lockContradiction(tx, contradictionId);
    if (c.status === 'RESOLVED') throw new DomainError('CONFLICT', `contradiction ${contradictionId} is already resolved (${c.verdict})`);
    await pausePoint('adjudicate:contradiction-locked');
    const live = await sql<{ holder: string; expires_at: Date }>`
      SELECT holder, expires_at FROM adjudication_leases
       WHERE fleet_id = ${actor.fleet} AND claim_key = ${c.claim_key} AND expires_at > now() FOR UPDATE`.execute(tx);
    if (live.rows[0]) {
      throw new DomainError('CONFLICT', `claim ${c.claim_key} is being adjudicated by ${live.rows[0].holder} until ${live.rows[0].expires_at.toISOString()}`);
    }
    const lease = await sql<{ fencing_token: string; expires_at: Date }>`
      INSERT INTO adjudication_leases (fleet_id, claim_key, contradiction_id, holder, fencing_token, expires_at)
      VALUES (${actor.fleet}, ${c.claim_key}, ${c.id}, ${holder}, nextval('fencing_tokens'), now() + ${`${leaseMs} milliseconds`}::interval)
      ON CONFLICT (fleet_id, claim_key) DO UPDATE SET contradiction_id = EXCLUDED.contradiction_id, holder = EXCLUDED.holder,
        fencing_token = EXCLUDED.fencing_token, expires_at = EXCLUDED.expires_at
      RETURNING fencing_token::text, expires_at`.execute(tx);
    await tx.updateTable('contradictions').set({ status: 'ADJUDICATING' }).where('id', '=', c.id).execute();
    const [existing] = await lockBeliefs(tx, [c.existing_id], 'share');
    const authors = await tx.selectFrom('agents').select(['id', 'name']).where('id', 'in', [existing!.author_id, c.proposed_author_id]).execute();
    const nameOf = (id: string) => authors.find((a) => a.id === id)?.name ?? `agent ${id}`;
    const l = lease.rows[0]!;
    return {
      lease: { contradictionId: c.id, claimKey: c.claim_key, holder, fencingToken: l.fencing_token, expiresAt: l.expires_at },
      input: {
        claimKey: c.claim_key,
        existing: { statement: existing!.statement, value: existing!.value, evidence: existing!.evidence, author: nameOf(existing!.author_id), at: existing!.created_at.toISOString() },
        proposed: { statement: c.proposed_statement, value: c.proposed_value, evidence: c.proposed_evidence, author: nameOf(c.proposed_author_id), at: c.created_at.toISOString() },
      },
    };
  });
}

/** Applies a verdict inside the caller's transaction (lease already checked, or none needed). */
async function applyVerdict(tx: Tx, actor: Actor, c: ContradictionRow, verdict: Verdict, rationale: string, adjudicator: string, vector: string | null): Promise<void> {
  if (verdict === 'ESCALATE') {
    await tx.updateTable('contradictions').set({ status: 'OPEN', verdict, rationale, adjudicator }).where('id', '=', c.id).execute();
    await appendEvent(tx, { fleet: actor.fleet, type: 'ContradictionResolved', actorId: actor.agentId, ids: [c.id], data: { verdict } });
    return;
  }
  let resolution: string | null = null;
  let accepted: string | null = null;
  if (verdict === 'ACCEPT_PROPOSED') {
    await lockClaim(tx, actor.fleet, c.claim_key);
    const [existing] = await lockBeliefs(tx, [c.existing_id], 'update');
    if (existing!.status === 'ACTIVE') {
      resolution = (await retractInTx(tx, actor, c.existing_id, `contradiction ${c.id}: the proposal was accepted (${rationale.slice(0, 200)})`)).retractionId;
    } else {
      resolution = existing!.retraction_id;
    }
    // A contradiction that blocks a reinstatement: accepting it brings the retracted root back itself.
    accepted = await resumeBlocked(tx, actor, c);
  }
  if (verdict === 'ACCEPT_PROPOSED' && !accepted) {
    if (!vector) throw new Error('ACCEPT_PROPOSED needs the proposal\'s embedding');
    const current = await activeBeliefForClaim(tx, actor.fleet, c.claim_key);
    if (current) throw new DomainError('CONFLICT', `claim ${c.claim_key} already holds another ACTIVE belief (${current.id}); raise a new contradiction`);
    const premises = await lockBeliefs(tx, c.proposed_derived_from, 'share');
    const fallen = premises.find((p) => p.status !== 'ACTIVE');
    if (fallen) throw new DomainError('CONFLICT', `the proposal rests on belief ${fallen.id}, which has been retracted; it cannot be accepted`);
    const b = await insertBelief(tx, { fleet: actor.fleet, agentId: c.proposed_author_id }, {
      claimKey: c.claim_key, statement: c.proposed_statement,
      value: c.proposed_value === null || c.proposed_value === undefined ? null : JSON.stringify(c.proposed_value),
      evidence: c.proposed_evidence, derivedFrom: c.proposed_derived_from, vector,
    });
    accepted = b.id;
  }
  await tx
    .updateTable('contradictions')
    .set({ status: 'RESOLVED', verdict, rationale, adjudicator, resolution_id: resolution, accepted_id: accepted, resolved_at: new Date() })
    .where('id', '=', c.id)
    .execute();
  await appendEvent(tx, { fleet: actor.fleet, type: 'ContradictionResolved', actorId: actor.agentId, ids: [c.id], data: { verdict } });
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
export async function commitVerdict(core: Core, actor: Actor, lease: Lease, result: { verdict: Verdict; rationale: string }, adjudicatorId: string): Promise<void> {
  const vector = result.verdict === 'ACCEPT_PROPOSED' ? await proposalVector(core, await contradictionRow(core, actor, lease.contradictionId)) : null;
  await writeTx(core.store, actor.fleet, async (tx) => {
    const current = await sql<{ ok: boolean }>`
      SELECT (fencing_token = ${lease.fencingToken}::bigint AND expires_at > now()) AS ok
        FROM adjudication_leases WHERE fleet_id = ${actor.fleet} AND claim_key = ${lease.claimKey} FOR UPDATE`.execute(tx);
    if (!current.rows[0]?.ok) {
      throw new DomainError('CONFLICT', `the adjudication lease on ${lease.claimKey} (token ${lease.fencingToken}) expired or was taken over; the verdict was rejected`);
    }
    const c = await lockContradiction(tx, lease.contradictionId);
    await applyVerdict(tx, actor, c, result.verdict, result.rationale, adjudicatorId, vector);
    await sql`DELETE FROM adjudication_leases WHERE fleet_id = ${actor.fleet} AND claim_key = ${lease.claimKey} AND fencing_token = ${lease.fencingToken}::bigint`.execute(tx);
  });
}

async function contradictionRow(core: Core, actor: Actor, id: string): Promise<ContradictionRow> {
  return writeTx(core.store, actor.fleet, (tx) => lockContradiction(tx, id));
}

/**
 * Runs the adjudicator under the claim's lease: lease (short transaction), model call (no
 * transaction open), fenced commit. A timeout or model failure comes back from the adjudicator as
 * ESCALATE, which leaves the contradiction OPEN for resolveContradiction.
 */
export async function adjudicateContradiction(core: Core, actor: Actor, adjudicator: Adjudicator, contradictionId: string, opts: { holder?: string; leaseMs?: number; timeoutMs?: number } = {}): Promise<string> {
  const id = v.id('contradictionId', contradictionId);
  const leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
  const { lease, input } = await takeLease(core, actor, id, opts.holder ?? `agent:${actor.agentId}`, leaseMs);
  const signal = AbortSignal.timeout(Math.max(1, Math.min(opts.timeoutMs ?? leaseMs - 1000, leaseMs - 100)));
  const result = await adjudicator.adjudicate(input, { signal });
  await commitVerdict(core, actor, lease, result, adjudicator.id);
  return id;
}

/** An agent's own verdict (KEEP_EXISTING or ACCEPT_PROPOSED); refused while a live lease holds the claim. */
export async function resolveContradiction(core: Core, actor: Actor, agentName: string, input: { contradictionId: string; verdict: Verdict; rationale: string }): Promise<string> {
  const id = v.id('contradictionId', input.contradictionId);
  if (input.verdict !== 'KEEP_EXISTING' && input.verdict !== 'ACCEPT_PROPOSED') throw badInput('verdict', 'must be KEEP_EXISTING or ACCEPT_PROPOSED');
  const rationale = v.text('rationale', input.rationale, v.LIMITS.reasonMax, { multiline: true });
  const row = await contradictionRow(core, actor, id);
  const vector = input.verdict === 'ACCEPT_PROPOSED' ? await proposalVector(core, row) : null;
  await writeTx(core.store, actor.fleet, async (tx) => {
    const c = await lockContradiction(tx, id);
    if (c.status === 'RESOLVED') throw new DomainError('CONFLICT', `contradiction ${id} is already resolved (${c.verdict})`);
    const live = await sql<{ holder: string }>`
      SELECT holder FROM adjudication_leases WHERE fleet_id = ${actor.fleet} AND claim_key = ${c.claim_key} AND expires_at > now() FOR UPDATE`.execute(tx);
    if (live.rows[0]) throw new DomainError('CONFLICT', `claim ${c.claim_key} is being adjudicated by ${live.rows[0].holder}`);
    await applyVerdict(tx, actor, c, input.verdict, rationale, `agent:${agentName}`, vector);
  });
  return id;
}
