import { sql } from 'kysely';
import type { Store } from '../store/engine';

/** One broken invariant: which (DESIGN.md numbering), what, and the offending rows. */
export interface Violation {
  invariant: number;
  rule: string;
  rows: Record<string, unknown>[];
}

/**
 * `standing`: the beliefs with a justification whose premises are all ACTIVE (a justification
 * without premises stands), for invariants 2 and 5. Computed once, by aggregation, rather than as
 * a nested NOT EXISTS per belief: with statistics taken before beliefs were retracted, the planner
 * estimates one non-ACTIVE belief, materializes that side of a nested-loop anti join, and compares
 * every justification with every retracted belief's premises (FINDINGS §5.3 has both timings).
 */
const STANDING = `standing AS MATERIALIZED (
      SELECT DISTINCT j.fleet_id, j.belief_id FROM justifications j
        LEFT JOIN justification_premises p ON p.fleet_id = j.fleet_id AND p.justification_id = j.id
        LEFT JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id
       GROUP BY j.fleet_id, j.id, j.belief_id HAVING coalesce(bool_and(pb.status = 'ACTIVE'), true))`;

const CHECKS: Array<{ invariant: number; rule: string; query: string }> = [
  {
    invariant: 1,
    rule: 'at most one ACTIVE belief per claim key in a fleet',
    query: `
    SELECT fleet_id, claim_key, count(*)::int AS active FROM beliefs WHERE status = 'ACTIVE' GROUP BY 1, 2 HAVING count(*) > 1`,
  },
  {
    invariant: 2,
    rule: 'an ACTIVE derived belief has a justification whose premises are all ACTIVE',
    query: `
    WITH ${STANDING}
    SELECT b.id::text, b.claim_key FROM beliefs b
     WHERE b.status = 'ACTIVE' AND NOT b.grounded AND NOT EXISTS (SELECT 1 FROM standing s WHERE s.fleet_id = b.fleet_id AND s.belief_id = b.id)`,
  },
  // Every edge's ends found in the edge's own fleet (the composite foreign keys of 0007 promise it; this checks it).
  {
    invariant: 2,
    rule: 'justifications, premises and supports stay inside one fleet',
    query: `
    SELECT 'premise' AS edge, p.justification_id::text AS id FROM justification_premises p
      LEFT JOIN justifications j ON j.fleet_id = p.fleet_id AND j.id = p.justification_id
      LEFT JOIN beliefs pb ON pb.fleet_id = p.fleet_id AND pb.id = p.premise_id
      LEFT JOIN beliefs b ON b.fleet_id = j.fleet_id AND b.id = j.belief_id
     WHERE j.id IS NULL OR pb.id IS NULL OR b.id IS NULL
    UNION ALL
    SELECT 'support', s.effect_id::text FROM effect_supports s
      LEFT JOIN effects e ON e.fleet_id = s.fleet_id AND e.id = s.effect_id LEFT JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
     WHERE e.id IS NULL OR b.id IS NULL`,
  },
  {
    invariant: 3,
    rule: 'no PENDING effect rests on a RETRACTED belief',
    query: `
    SELECT DISTINCT e.id::text, e.kind FROM effects e JOIN effect_supports s ON s.fleet_id = e.fleet_id AND s.effect_id = e.id
      JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
     WHERE e.status = 'PENDING' AND b.status = 'RETRACTED'`,
  },
  {
    invariant: 3,
    rule: 'every EXECUTING effect resting on a RETRACTED belief is marked reached',
    query: `
    SELECT DISTINCT e.id::text FROM effects e JOIN effect_supports s ON s.fleet_id = e.fleet_id AND s.effect_id = e.id
      JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
     WHERE e.status = 'EXECUTING' AND b.status = 'RETRACTED' AND e.reached_by IS NULL`,
  },
  {
    invariant: 4,
    rule: 'every EXECUTED effect resting on a RETRACTED belief has exactly one reversal',
    query: `
    SELECT e.id::text, count(r.id)::int AS reversals FROM effects e LEFT JOIN reversals r ON r.fleet_id = e.fleet_id AND r.effect_id = e.id
     WHERE e.status = 'EXECUTED' AND EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                                              WHERE s.fleet_id = e.fleet_id AND s.effect_id = e.id AND b.status = 'RETRACTED')
     GROUP BY e.fleet_id, e.id HAVING count(r.id) <> 1`,
  },
  {
    invariant: 4,
    rule: 'a reversal belongs to an EXECUTED effect with a retracted support, under the key derived from the effect key, UNREACHABLE exactly when the kind is not reversible',
    query: `
    SELECT r.id::text, r.status, r.idempotency_key, e.status AS effect_status FROM reversals r
      JOIN effects e ON e.fleet_id = r.fleet_id AND e.id = r.effect_id JOIN effect_kinds k ON k.fleet_id = e.fleet_id AND k.kind = e.kind
     WHERE e.status <> 'EXECUTED'
        OR r.idempotency_key <> 'reversal:' || e.idempotency_key
        OR (r.status <> 'VOIDED' AND (r.status = 'UNREACHABLE') <> (NOT k.reversible))
        OR r.amount_minor IS DISTINCT FROM e.amount_minor OR r.currency IS DISTINCT FROM e.currency
        OR (r.status <> 'VOIDED' AND NOT EXISTS (SELECT 1 FROM reinstatement_money m WHERE m.fleet_id = r.fleet_id AND m.reversal_id = r.id AND m.line <> 'VOIDED')
            AND NOT EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                             WHERE s.fleet_id = e.fleet_id AND s.effect_id = e.id AND b.status = 'RETRACTED'))`,
  },
  // Reinstatement's money (DESIGN.md, reinstatement): nothing is voided that a retraction still holds down, and every
  // VOIDED reversal, re-execution owed and watched reversal is one line of a reinstatement, under the derived key.
  {
    invariant: 4,
    rule: 'a VOIDED reversal rests on no RETRACTED belief and a reinstatement line voided it',
    query: `
    SELECT r.id::text, r.effect_id::text FROM reversals r
     WHERE r.status = 'VOIDED'
       AND (EXISTS (SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
                     WHERE s.fleet_id = r.fleet_id AND s.effect_id = r.effect_id AND b.status = 'RETRACTED')
            OR NOT EXISTS (SELECT 1 FROM reinstatement_money m WHERE m.fleet_id = r.fleet_id AND m.reversal_id = r.id AND m.line = 'VOIDED'))`,
  },
  {
    invariant: 4,
    rule: 'a re-execution owed names a CONFIRMED reversal under reexecution: + its key, once; a watched line names a reversal still DISPATCHED or FAILED',
    query: `
    SELECT m.reinstatement_id::text, m.reversal_id::text, m.line, r.status FROM reinstatement_money m
      JOIN reversals r ON r.fleet_id = m.fleet_id AND r.id = m.reversal_id
     WHERE m.effect_id <> r.effect_id
        OR (m.line = 'REEXECUTION_OWED' AND (r.status <> 'CONFIRMED' OR m.reexecution_key <> 'reexecution:' || r.idempotency_key))
        OR (m.line = 'IN_FLIGHT' AND r.status NOT IN ('DISPATCHED', 'FAILED'))
        OR m.amount_minor IS DISTINCT FROM r.amount_minor OR m.currency IS DISTINCT FROM r.currency`,
  },
  {
    invariant: 5,
    rule: 'a closed RETRACTED interval of a belief lies after its assertion, before its current interval, and overlaps no other',
    query: `
    SELECT h.belief_id::text, h.retracted_at, h.reinstated_at FROM belief_status_history h
      JOIN beliefs b ON b.fleet_id = h.fleet_id AND b.id = h.belief_id
     WHERE h.retracted_at < b.created_at OR (b.status = 'RETRACTED' AND b.retracted_at < h.reinstated_at)
        OR EXISTS (SELECT 1 FROM belief_status_history o WHERE o.fleet_id = h.fleet_id AND o.belief_id = h.belief_id
                    AND o.retracted_at > h.retracted_at AND o.retracted_at < h.reinstated_at)`,
  },
  {
    invariant: 5,
    rule: 'a retraction took its root down and counts exactly the beliefs that carry it',
    query: `
    SELECT rt.id::text, rt.beliefs_retracted, (SELECT count(*)::int FROM beliefs b WHERE b.fleet_id = rt.fleet_id AND b.retraction_id = rt.id) AS carried
      FROM retractions rt JOIN beliefs root ON root.fleet_id = rt.fleet_id AND root.id = rt.root_id
      LEFT JOIN reinstatements ri ON ri.fleet_id = rt.fleet_id AND ri.retraction_id = rt.id
     WHERE (rt.reinstated_at IS NULL AND (root.retraction_id IS DISTINCT FROM rt.id OR root.retraction_depth <> 0))
        OR (rt.reinstated_at IS NOT NULL AND (root.retraction_id IS NOT DISTINCT FROM rt.id OR ri.status IS DISTINCT FROM 'REINSTATED'))
        OR rt.beliefs_retracted <> (SELECT count(*) FROM beliefs b WHERE b.fleet_id = rt.fleet_id AND b.retraction_id = rt.id) + coalesce(cardinality(ri.belief_ids), 0)`,
  },
  {
    invariant: 5,
    rule: 'a reinstatement brought back only beliefs of its retraction, root first, each once, and a BLOCKED one brought back none',
    query: `
    SELECT ri.id::text, ri.status FROM reinstatements ri JOIN retractions rt ON rt.fleet_id = ri.fleet_id AND rt.id = ri.retraction_id
     WHERE (ri.status = 'BLOCKED' AND (cardinality(ri.belief_ids) > 0 OR rt.reinstated_at IS NOT NULL))
        OR (ri.status = 'REINSTATED' AND (ri.belief_ids[1] IS DISTINCT FROM rt.root_id OR rt.reinstated_at IS NULL))
        OR cardinality(ri.belief_ids) <> (SELECT count(DISTINCT x) FROM unnest(ri.belief_ids) x)`,
  },
  // Joins, not EXISTS under OR: an OR'd EXISTS stays a subplan run once per retracted belief, and
  // with one retracted belief estimated it re-scanned standing for each of 100k (over 5 minutes).
  {
    invariant: 5,
    rule: 'a belief retracted by cascade (depth > 0) is derived and has no justification left standing',
    query: `
    WITH ${STANDING}, justified AS MATERIALIZED (SELECT DISTINCT fleet_id, belief_id FROM justifications)
    SELECT b.id::text, b.retraction_id::text FROM beliefs b
      LEFT JOIN justified j ON j.fleet_id = b.fleet_id AND j.belief_id = b.id
      LEFT JOIN standing s ON s.fleet_id = b.fleet_id AND s.belief_id = b.id
     WHERE b.status = 'RETRACTED' AND b.retraction_depth > 0
       AND (b.grounded OR j.belief_id IS NULL OR s.belief_id IS NOT NULL)
       -- A reinstatement brings back its own retraction's beliefs only: one that fell in another
       -- retraction may stand again once a premise of it was reinstated, and one whose claim was taken
       -- meanwhile waits on the contradiction its reinstatement raised.
       AND NOT (s.belief_id IS NOT NULL AND NOT b.grounded AND (
             EXISTS (SELECT 1 FROM contradictions c WHERE c.fleet_id = b.fleet_id AND c.reinstates_id = b.id)
             OR EXISTS (SELECT 1 FROM justifications j2 JOIN justification_premises p2 ON p2.fleet_id = j2.fleet_id AND p2.justification_id = j2.id
                          JOIN reinstatements ri ON ri.fleet_id = p2.fleet_id AND p2.premise_id = ANY(ri.belief_ids)
                         WHERE j2.fleet_id = b.fleet_id AND j2.belief_id = b.id)))`,
  },
  {
    invariant: 5,
    rule: 'a cancelled or reached effect rests on a belief its retraction took down, and a cancelled effect never ran',
    query: `
    SELECT e.id::text, e.status FROM effects e
     WHERE (e.cancelled_by IS NOT NULL AND (e.executed_at IS NOT NULL OR e.external_ref IS NOT NULL OR (NOT EXISTS (
              SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
               WHERE s.fleet_id = e.fleet_id AND s.effect_id = e.id AND b.retraction_id = e.cancelled_by)
              AND NOT EXISTS (SELECT 1 FROM retractions rt WHERE rt.fleet_id = e.fleet_id AND rt.id = e.cancelled_by AND rt.reinstated_at IS NOT NULL))))
        OR (e.reached_by IS NOT NULL AND NOT EXISTS (
              SELECT 1 FROM effect_supports s JOIN beliefs b ON b.fleet_id = s.fleet_id AND b.id = s.belief_id
               WHERE s.fleet_id = e.fleet_id AND s.effect_id = e.id AND b.retraction_id = e.reached_by)
              AND NOT EXISTS (SELECT 1 FROM retractions rt WHERE rt.fleet_id = e.fleet_id AND rt.id = e.reached_by AND rt.reinstated_at IS NOT NULL))
        OR (e.restored_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM reinstatements ri WHERE ri.fleet_id = e.fleet_id AND ri.id = e.restored_by AND ri.status = 'REINSTATED'))`,
  },
  {
    invariant: 6,
    rule: 'CONFIRMED reversals carry a provider reference and a confirmation time; nothing else does',
    query: `
    SELECT id::text, status FROM reversals
     WHERE (status = 'CONFIRMED') <> (provider_ref IS NOT NULL) OR (status = 'CONFIRMED') <> (confirmed_at IS NOT NULL)`,
  },
  {
    invariant: 7,
    rule: 'every retraction has its Started and Committed events, and one BeliefRetracted event per belief',
    query: `
    SELECT rt.id::text,
           (SELECT count(*)::int FROM events e WHERE e.fleet_id = rt.fleet_id AND e.retraction_id = rt.id AND e.type = 'RetractionStarted') AS started,
           (SELECT count(*)::int FROM events e WHERE e.fleet_id = rt.fleet_id AND e.retraction_id = rt.id AND e.type = 'RetractionCommitted') AS committed,
           (SELECT coalesce(sum(cardinality(e.ids)), 0)::int FROM events e WHERE e.fleet_id = rt.fleet_id AND e.retraction_id = rt.id AND e.type = 'BeliefRetracted') AS belief_events
      FROM retractions rt
     WHERE (SELECT count(*) FROM events e WHERE e.fleet_id = rt.fleet_id AND e.retraction_id = rt.id AND e.type = 'RetractionStarted') <> 1
        OR (SELECT count(*) FROM events e WHERE e.fleet_id = rt.fleet_id AND e.retraction_id = rt.id AND e.type = 'RetractionCommitted') <> 1
        OR (SELECT coalesce(sum(cardinality(e.ids)), 0) FROM events e WHERE e.fleet_id = rt.fleet_id AND e.retraction_id = rt.id AND e.type = 'BeliefRetracted') <> rt.beliefs_retracted`,
  },
  {
    invariant: 7,
    rule: 'every reinstatement has its Started event, a completed one its Committed event, and one BeliefReinstated event per belief',
    query: `
    SELECT ri.id::text,
           (SELECT count(*)::int FROM events e WHERE e.fleet_id = ri.fleet_id AND e.retraction_id = ri.retraction_id AND e.type = 'ReinstatementStarted') AS started,
           (SELECT coalesce(sum(cardinality(e.ids)), 0)::int FROM events e WHERE e.fleet_id = ri.fleet_id AND e.retraction_id = ri.retraction_id AND e.type = 'BeliefReinstated') AS belief_events
      FROM reinstatements ri
     WHERE (SELECT count(*) FROM events e WHERE e.fleet_id = ri.fleet_id AND e.retraction_id = ri.retraction_id AND e.type = 'ReinstatementStarted') <> 1
        OR (SELECT count(*) FROM events e WHERE e.fleet_id = ri.fleet_id AND e.retraction_id = ri.retraction_id AND e.type = 'ReinstatementCommitted') < 1
        OR (SELECT coalesce(sum(cardinality(e.ids)), 0) FROM events e WHERE e.fleet_id = ri.fleet_id AND e.retraction_id = ri.retraction_id AND e.type = 'BeliefReinstated') <> cardinality(ri.belief_ids)`,
  },
  {
    invariant: 7,
    rule: 'every belief, effect, cancellation and reversal has its event',
    query: `
    WITH ev AS (SELECT type, unnest(ids) AS id FROM events)
    SELECT 'belief' AS what, b.id::text FROM beliefs b WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.type = 'BeliefAsserted' AND ev.id = b.id)
    UNION ALL
    SELECT 'effect', e.id::text FROM effects e WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.type = 'EffectProposed' AND ev.id = e.id)
    UNION ALL
    SELECT 'cancellation', e.id::text FROM effects e WHERE e.status = 'CANCELLED' AND NOT EXISTS (SELECT 1 FROM ev WHERE ev.type = 'EffectCancelled' AND ev.id = e.id)
    UNION ALL
    SELECT 'reversal', r.id::text FROM reversals r WHERE NOT EXISTS (SELECT 1 FROM ev WHERE ev.type = 'ReversalRecorded' AND ev.id = r.id)`,
  },
  {
    invariant: 8,
    rule: 'a resolved contradiction has a verdict; an accepted one names the retraction of the existing belief and the belief written',
    query: `
    SELECT c.id::text, c.status, c.verdict FROM contradictions c
     WHERE (c.status = 'RESOLVED' AND (c.verdict IS NULL OR c.resolved_at IS NULL))
        OR (c.verdict = 'ACCEPT_PROPOSED' AND c.status = 'RESOLVED' AND (c.accepted_id IS NULL OR c.resolution_id IS NULL
            OR NOT EXISTS (SELECT 1 FROM beliefs b WHERE b.fleet_id = c.fleet_id AND b.id = c.existing_id AND b.status = 'RETRACTED')))`,
  },
  {
    invariant: 8,
    rule: 'a live lease belongs to a contradiction under adjudication on the same claim',
    query: `
    SELECT l.fleet_id, l.claim_key, l.contradiction_id::text FROM adjudication_leases l
      LEFT JOIN contradictions c ON c.fleet_id = l.fleet_id AND c.id = l.contradiction_id
     WHERE l.expires_at > now() AND (c.id IS NULL OR c.status <> 'ADJUDICATING' OR c.claim_key <> l.claim_key)`,
  },
];

/**
 * Every violation of DESIGN.md's invariants, across all fleets, with the offending rows. Empty
 * means the store is consistent. Runs with row security off, so it needs the store's owner
 * connection: as any other role it fails loudly rather than check an empty view.
 */
export async function checkInvariants(store: Store): Promise<Violation[]> {
  await analyzeStale(store);
  return store.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      await sql`SET LOCAL row_security = off`.execute(tx);
      const out: Violation[] = [];
      for (const c of CHECKS) {
        const r = await sql.raw<Record<string, unknown>>(c.query + ' LIMIT 20').execute(tx);
        if (r.rows.length > 0) out.push({ invariant: c.invariant, rule: c.rule, rows: r.rows });
      }
      return out;
    });
}

/**
 * Rows changed since a table's statistics were taken past which checkInvariants ANALYZEs it first.
 * Every check reads whole tables, and a plan made from statistics taken before a cascade (one
 * RETRACTED belief estimated, 100k there) joins by nested loop where it should hash: quadratic.
 * Autovacuum would refresh them, but a server may run without it (many CI servers do, and PGlite
 * has none); a few thousand changed rows cannot make a nested loop costly, so small tests pay nothing.
 */
const STALE_ROWS = 5_000;

/** ANALYZEs the tables with more than STALE_ROWS changes since their statistics (or none at all), as the owner. */
async function analyzeStale(store: Store): Promise<void> {
  // This backend's counters reach the shared statistics at most once a second: flush them first.
  await sql`SELECT pg_stat_force_next_flush()`.execute(store.db);
  const stale = await sql<{ table: string }>`
    SELECT c.oid::regclass::text AS "table" FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
     WHERE s.n_mod_since_analyze > ${STALE_ROWS} OR (c.reltuples < 0 AND s.n_live_tup > ${STALE_ROWS})
     ORDER BY 1`.execute(store.db);
  // The name comes from the catalog as regclass text: already quoted where it needs to be.
  for (const t of stale.rows) await sql.raw(`ANALYZE ${t.table}`).execute(store.db);
}
