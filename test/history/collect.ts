import type { History, Op, Receipt, Txn } from './elle';

/** A SQL session: a node-postgres client, or PGlite in this process (both answer `query(text, values)` with rows). */
export interface Sql {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/**
 * What the database holds after recovery, as the checker's plain data: the fleet's event log grouped by
 * writing transaction (events.tx) in the order the log streams it, each transaction named by the client
 * operation that wrote it (its tag is in the statement, reason, idempotency key, external or provider ref),
 * the receipts beside the rows behind them, and every reversal with its effect's amount.
 */
export async function collect(
  db: Sql,
  fleet: string,
  ops: Op[],
  committed: string[],
  streams: History['streams'],
): Promise<History> {
  const q = async <T>(text: string, values: unknown[] = []) => (await db.query(text, values)).rows as T[];
  const claims = new Map(
    (
      await q<{ id: string; claim_key: string; statement: string }>(
        `SELECT id::text, claim_key, statement FROM beliefs WHERE fleet_id = $1`,
        [fleet],
      )
    ).map((b) => [b.id, b]),
  );
  const retractionTags = new Map(
    (
      await q<{ id: string; reason: string }>(`SELECT id::text, reason FROM retractions WHERE fleet_id = $1`, [fleet])
    ).map((r) => [r.id, r.reason]),
  );
  const reinstateTags = new Map(
    (
      await q<{ rid: string; reason: string }>(
        `SELECT retraction_id::text AS rid, reason FROM reinstatements WHERE fleet_id = $1 AND status = 'REINSTATED'`,
        [fleet],
      )
    ).map((r) => [r.rid, r.reason]),
  );
  const effectTags = new Map(
    (
      await q<{ id: string; key: string }>(`SELECT id::text, idempotency_key AS key FROM effects WHERE fleet_id = $1`, [
        fleet,
      ])
    ).map((e) => [e.id, e.key]),
  );
  const events = await q<{ tx: string; type: string; rid: string | null; ids: string[] }>(
    `SELECT tx::text, type, retraction_id::text AS rid, ids::text[] AS ids FROM events WHERE fleet_id = $1 ORDER BY events.tx, events.seq`,
    [fleet],
  );
  const log: Txn[] = [];
  const byTx = new Map<string, Txn & { rank: number }>();
  const name = (t: Txn & { rank: number }, tag: string | undefined, rank: number) => {
    if (tag && rank < t.rank) Object.assign(t, { tag, rank });
  };
  for (const e of events) {
    let t = byTx.get(e.tx);
    if (!t) {
      t = { id: `tx${e.tx}`, tag: null, writes: [], rank: 9 };
      byTx.set(e.tx, t);
      log.push(t);
    }
    const write = (state: string) => {
      for (const id of e.ids) {
        const b = claims.get(id);
        if (b) t!.writes.push({ key: b.claim_key, belief: id, state });
      }
    };
    if (e.type === 'BeliefAsserted') {
      write('ACTIVE');
      name(t, claims.get(e.ids[0]!)?.statement, 2);
    } else if (e.type === 'BeliefRetracted') write(`R${e.rid}`);
    else if (e.type === 'BeliefReinstated') write('ACTIVE');
    else if (e.type === 'RetractionCommitted') name(t, retractionTags.get(e.rid!), 0);
    else if (e.type === 'ReinstatementCommitted') name(t, reinstateTags.get(e.rid!), 1);
    else if (e.type === 'EffectProposed') name(t, effectTags.get(e.ids[0]!), 3);
  }
  // Completions and confirmations write no register: the log names them by the reference the client gave.
  for (const r of await q<{ ref: string }>(
    `SELECT external_ref AS ref FROM effects WHERE fleet_id = $1 AND external_ref IS NOT NULL
                                              UNION ALL SELECT provider_ref FROM reversals WHERE fleet_id = $1 AND provider_ref IS NOT NULL`,
    [fleet],
  ))
    log.push({ id: `ref:${r.ref}`, tag: r.ref, writes: [] });

  const money = await q<{ rid: string; currency: string; sum: string }>(
    `SELECT retraction_id::text AS rid, currency, sum(amount_minor)::text AS sum FROM reversals WHERE fleet_id = $1 AND currency IS NOT NULL GROUP BY 1, 2`,
    [fleet],
  );
  const fell = await q<{ rid: string; n: number }>(
    `SELECT retraction_id::text AS rid, sum(cardinality(ids))::int AS n FROM events WHERE fleet_id = $1 AND type = 'BeliefRetracted' GROUP BY 1`,
    [fleet],
  );
  const counted = await q<{ id: string; beliefs: number; reinstated: boolean }>(
    `SELECT id::text, beliefs_retracted AS beliefs, reinstated_at IS NOT NULL AS reinstated FROM retractions WHERE fleet_id = $1`,
    [fleet],
  );
  const receipts: Receipt[] = counted.map((r) => {
    const m = Object.fromEntries(money.filter((x) => x.rid === r.id).map((x) => [x.currency, Number(x.sum)]));
    return {
      id: r.id,
      tag: retractionTags.get(r.id) ?? null,
      counted: { beliefs: r.beliefs, money: m },
      rows: { beliefs: fell.find((f) => f.rid === r.id)?.n ?? 0, money: m },
      reinstated: r.reinstated,
    };
  });
  const reversals = (
    await q<{ id: string; effect: string; retraction: string; amount: string | null; effect_amount: string | null }>(
      `SELECT r.id::text, r.effect_id::text AS effect, r.retraction_id::text AS retraction, r.amount_minor::text AS amount, e.amount_minor::text AS effect_amount
         FROM reversals r JOIN effects e ON e.fleet_id = r.fleet_id AND e.id = r.effect_id WHERE r.fleet_id = $1`,
      [fleet],
    )
  ).map((r) => ({
    id: r.id,
    effect: r.effect,
    retraction: r.retraction,
    amount: r.amount === null ? null : Number(r.amount),
    effectAmount: r.effect_amount === null ? null : Number(r.effect_amount),
  }));
  return {
    ops,
    log: log.map(({ id, tag, writes }) => ({ id, tag, writes })),
    receipts,
    reversals,
    committed,
    streams,
  };
}
