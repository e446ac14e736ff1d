import { pausePoint } from '../store/pause';
import type { Actor, Core } from '../core';
import { insertContradiction } from '../contradiction/contradiction.repository';
import { firstDescendantAmong, hasJustification, insertJustification } from '../derivation/justification.repository';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { type Tx, inTx, writeTx } from '../store/tx';
import * as v from '../validation';
import { type BeliefRow, insertBeliefBumpClaim, lockBeliefs, nextBeliefId } from './belief.repository';
import { lockClaimReadActive } from './claim.repository';
import { decodeReadPoint } from './snapshot';
import { Refusal, answerRefusal } from '../kernel/refusal';

export interface AssertBeliefInput {
  claimKey: string;
  statement: string;
  value?: unknown;
  evidence?: string | null;
  derivedFrom?: readonly string[] | null;
  basedOn?: string | null;
}

/** What COMMIT decided. Exactly one of these; only `asserted` and `corroborated` wrote a belief row or justification. */
export type AssertBeliefResult =
  | { kind: 'asserted'; belief: BeliefRow }
  | { kind: 'corroborated'; belief: BeliefRow }
  | { kind: 'contradiction'; contradictionId: string }
  | { kind: 'premiseRetracted'; premise: BeliefRow }
  | { kind: 'claimChanged'; claimKey: string; current: BeliefRow | null };

function validateAssert(input: AssertBeliefInput) {
  return {
    claimKey: v.newClaimKey('claimKey', input.claimKey),
    statement: v.text('statement', input.statement, v.LIMITS.statementMax, { multiline: true }),
    value: v.json('value', input.value, v.LIMITS.valueBytesMax),
    evidence: v.optionalText('evidence', input.evidence, v.LIMITS.evidenceMax, { multiline: true }),
    derivedFrom: v.ids('derivedFrom', input.derivedFrom, 0, v.LIMITS.premisesMax),
  };
}

/** Locks and re-checks premises: NOT_FOUND for an unknown (or other fleet's) id, else the first fallen one. */
async function checkPremises(tx: Tx, fleet: string, ids: readonly string[], field: string): Promise<BeliefRow | null> {
  const rows = await lockBeliefs(tx, fleet, ids, 'share');
  if (rows.length !== ids.length) {
    const missing = ids.find((id) => !rows.some((r) => r.id === id))!;
    throw new DomainError('NOT_FOUND', `${field}: belief ${missing} not found`, field);
  }
  return rows.find((r) => r.status !== 'ACTIVE') ?? null;
}

/**
 * COMMIT of a turn, in one SERIALIZABLE transaction: lock the claim row, lock and re-check every
 * premise, read the ACTIVE belief, then write it (asserted), recognise the same value
 * (corroborated; a new premise set is kept as an alternative justification), raise a contradiction
 * (nothing written to the claim), or refuse because a premise fell (premiseRetracted) or, with
 * `basedOn`, because the claim was written after the READ (claimChanged). The embedding is computed
 * before the transaction opens.
 */
export async function assertBelief(core: Core, actor: Actor, input: AssertBeliefInput): Promise<AssertBeliefResult> {
  const i = validateAssert(input);
  const readPoint = input.basedOn ? decodeReadPoint('basedOn', input.basedOn, actor.fleet) : null;
  const [embedding] = await core.embedder.embed([i.statement]);
  const vector = `[${embedding!.join(',')}]`;

  // 'soon': a turn appends BeliefAsserted, BeliefCorroborated or ContradictionRaised, which no
  // subscription streams and no worker claims. A COMMIT that refuses rolls back (not even the claim row it created
  // stays).
  const lock = core.skipClaimLock !== true;
  return answerRefusal(() =>
    writeTx(core.store, actor.fleet, (tx) => commitTurn(tx, actor, i, vector, readPoint, lock), 'soon'),
  );
}

/** A COMMIT that refuses. */
class Refused extends Refusal<AssertBeliefResult> {}

async function commitTurn(
  tx: Tx,
  actor: Actor,
  i: ReturnType<typeof validateAssert>,
  vector: string,
  readPoint: ReturnType<typeof decodeReadPoint> | null,
  lock: boolean,
): Promise<AssertBeliefResult> {
  const snapshot = readPoint?.snapshot ?? null;
  const claim = await lockClaimReadActive(tx, actor.fleet, i.claimKey, i.value, snapshot, lock);
  if (claim.snapshotAhead)
    throw badInput(
      'basedOn',
      'must be a snapshot returned by search; this one is ahead of the database (from the future)',
    );
  const fallen = await checkPremises(tx, actor.fleet, i.derivedFrom, 'derivedFrom');
  await pausePoint('assertBelief:premises-locked');
  if (fallen) throw new Refused({ kind: 'premiseRetracted', premise: fallen });
  const found = claim.active;
  const active = found?.belief;
  if (!claim.visibleInSnapshot)
    throw new Refused({ kind: 'claimChanged', claimKey: i.claimKey, current: active ?? null });

  if (active) {
    if (found.sameValue) {
      if (
        i.derivedFrom.length > 0 &&
        !active.grounded &&
        !(await hasJustification(tx, actor.fleet, active.id, i.derivedFrom))
      ) {
        if (!(await firstDescendantAmong(tx, actor.fleet, active.id, i.derivedFrom))) {
          await insertJustification(tx, actor.fleet, active.id, i.derivedFrom, actor.agentId);
        }
      }
      await appendEvent(tx, {
        fleet: actor.fleet,
        type: 'BeliefCorroborated',
        actorId: actor.agentId,
        ids: [active.id],
      });
      return { kind: 'corroborated', belief: active };
    }
    const id = await insertContradiction(tx, actor.fleet, {
      claim_key: i.claimKey,
      existing_id: active.id,
      proposed_statement: i.statement,
      proposed_value: i.value,
      proposed_evidence: i.evidence,
      proposed_author_id: actor.agentId,
      proposed_derived_from: i.derivedFrom,
    });
    await appendEvent(tx, {
      fleet: actor.fleet,
      type: 'ContradictionRaised',
      actorId: actor.agentId,
      ids: [id],
      data: { claimKey: i.claimKey },
    });
    return { kind: 'contradiction', contradictionId: id };
  }

  const belief = await insertBelief(tx, actor, { ...i, vector, id: claim.nextBeliefId });
  return { kind: 'asserted', belief };
}

/**
 * Writes a new ACTIVE belief with its justification, bumps the claim, appends BeliefAsserted: one statement, and one
 * more for a justification, and one before to draw its id unless the turn drew it with its first statement.
 * Caller holds the claim lock.
 */
export async function insertBelief(
  tx: Tx,
  actor: Actor,
  b: {
    claimKey: string;
    statement: string;
    value: string | null;
    evidence: string | null;
    derivedFrom: readonly string[];
    vector: string;
    id?: string | null;
  },
): Promise<BeliefRow> {
  const belief = await insertBeliefBumpClaim(tx, {
    id: b.id ?? (await nextBeliefId(tx)),
    fleet: actor.fleet,
    authorId: actor.agentId,
    claimKey: b.claimKey,
    statement: b.statement,
    value: b.value,
    evidence: b.evidence,
    grounded: b.derivedFrom.length === 0,
    vector: b.vector,
  });
  if (b.derivedFrom.length > 0) await insertJustification(tx, actor.fleet, belief.id, b.derivedFrom, actor.agentId);
  return belief;
}

/**
 * Adds an alternative justification to an ACTIVE belief. Refuses unknown premises (NOT_FOUND),
 * retracted premises and cycles (CONFLICT), in one SERIALIZABLE transaction. Adding a premise set
 * the belief already has is a no-op.
 *
 * It holds the fleet's write lock exclusively, as a retraction does: its cycle check reads the
 * belief's whole descendant subgraph, and that read's predicate locks made it and the derivations
 * inserting beside it fail serialization (0.24 retries per justification under the stress run, and
 * the derivations' own rate with it: FINDINGS §5.2). Turns (assertBelief) stay concurrent.
 * JustificationAdded is streamed by no subscription and claimed by no worker, hence wake 'soon'.
 */
export async function addJustification(
  core: Core,
  actor: Actor,
  input: { beliefId: string; premises: readonly string[] },
): Promise<BeliefRow> {
  const beliefId = v.id('beliefId', input.beliefId);
  const premises = v.ids('premises', input.premises, 1, v.LIMITS.premisesMax);
  return inTx(core.store, { fleet: actor.fleet, wake: 'soon', fleetLock: 'exclusive' }, async (tx) => {
    const [belief] = await lockBeliefs(tx, actor.fleet, [beliefId], 'update');
    if (!belief) throw notFound('belief', beliefId, 'beliefId');
    if (belief.status !== 'ACTIVE')
      throw new DomainError(
        'CONFLICT',
        `beliefId: belief ${beliefId} is retracted; a retracted belief cannot gain support`,
        'beliefId',
      );
    if (premises.includes(beliefId)) throw badInput('premises', 'a belief cannot be its own premise');
    const fallen = await checkPremises(tx, actor.fleet, premises, 'premises');
    if (fallen) throw new DomainError('CONFLICT', `premises: belief ${fallen.id} is retracted`, 'premises');
    if (await hasJustification(tx, actor.fleet, beliefId, premises)) return belief;
    const cyclic = await firstDescendantAmong(tx, actor.fleet, beliefId, premises);
    if (cyclic) {
      throw new DomainError(
        'CONFLICT',
        `premises: belief ${cyclic} already rests on belief ${beliefId}; this justification would create a cycle`,
        'premises',
      );
    }
    await insertJustification(tx, actor.fleet, beliefId, premises, actor.agentId);
    await appendEvent(tx, {
      fleet: actor.fleet,
      type: 'JustificationAdded',
      actorId: actor.agentId,
      ids: [beliefId],
      data: { premises },
    });
    return belief;
  });
}
