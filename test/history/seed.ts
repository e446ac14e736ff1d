import type { Sql } from './collect';
import { gid } from '../../src/kernel/ids';

/**
 * A tree of `n` beliefs (fan-out 4) under one root, written in bulk with its events as test/crash does, plus
 * 20 EXECUTED refunds on its leaves: retracting the root is a cascade long enough for a fault to land inside it,
 * and it records reversals (money) in the same transaction.
 */
export async function seedTree(
  db: Sql,
  fleet: string,
  prefix: string,
  n: number,
  agentId: string,
): Promise<{ root: string }> {
  const vec = `[${Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
  await db.query('BEGIN');
  try {
    await db.query('SET LOCAL row_security = off');
    await db.query(`INSERT INTO claims (fleet_id, key) SELECT $1, $2 || g FROM generate_series(0, $3 - 1) g`, [
      fleet,
      prefix,
      n,
    ]);
    await db.query(
      `INSERT INTO beliefs (fleet_id, claim_key, statement, value, author_id, grounded, embedding)
      SELECT $1, $2 || g, 'node ' || g, 'true', $3, g = 0, $4::vector FROM generate_series(0, $5 - 1) g`,
      [fleet, prefix, agentId, vec, n],
    );
    await db.query(
      `CREATE TEMP TABLE ids ON COMMIT DROP AS SELECT substr(claim_key, length($2) + 1)::int AS g, id FROM beliefs WHERE fleet_id = $1 AND claim_key LIKE $2 || '%'`,
      [fleet, prefix],
    );
    await db.query(
      `INSERT INTO justifications (fleet_id, belief_id, created_by) SELECT $1, id, $2 FROM ids WHERE g > 0`,
      [fleet, agentId],
    );
    await db.query(
      `INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
      SELECT j.id, p.id, $1 FROM justifications j JOIN ids c ON c.id = j.belief_id JOIN ids p ON p.g = (c.g - 1) / 4 WHERE j.fleet_id = $1`,
      [fleet],
    );
    await db.query(`INSERT INTO events (fleet_id, type, ids) SELECT $1, 'BeliefAsserted', array_agg(id) FROM ids`, [
      fleet,
    ]);
    await db.query(
      `INSERT INTO effects (fleet_id, kind, status, amount_minor, currency, idempotency_key, proposed_by, external_ref, executed_at)
      SELECT $1, 'refund', 'EXECUTED', 1000 + g, 'USD', $2 || '#' || g, $3, 'bank-' || g, now() FROM generate_series(1, 20) g`,
      [fleet, prefix, agentId],
    );
    await db.query(
      `INSERT INTO effect_supports (effect_id, belief_id, fleet_id)
      SELECT e.id, i.id, $1 FROM effects e JOIN ids i ON i.g = $3 - split_part(e.idempotency_key, '#', 2)::int
       WHERE e.fleet_id = $1 AND e.idempotency_key LIKE $2 || '#%'`,
      [fleet, prefix, n - 1],
    );
    await db.query(
      `INSERT INTO events (fleet_id, type, ids) SELECT $1, 'EffectProposed', array_agg(id) FROM effects WHERE fleet_id = $1 AND idempotency_key LIKE $2 || '#%'`,
      [fleet, prefix],
    );
    await db.query('COMMIT');
  } catch (e) {
    await db.query('ROLLBACK');
    throw e;
  }
  await db.query('ANALYZE beliefs, justifications, justification_premises, effects, effect_supports, events');
  const root = await db.query(`SELECT id::text FROM beliefs WHERE fleet_id = $1 AND claim_key = $2`, [
    fleet,
    `${prefix}0`,
  ]);
  return { root: gid('Belief', root.rows[0].id) };
}
