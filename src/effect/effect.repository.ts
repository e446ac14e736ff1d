import type { Db } from '../store/tx';
import type { EffectStatus } from '../store/schema';

export interface EffectRow {
  id: string;
  fleet_id: string;
  kind: string;
  status: EffectStatus;
  amount_minor: string | null;
  currency: string | null;
  payload: unknown;
  idempotency_key: string;
  proposed_by: string;
  claimed_by: string | null;
  external_ref: string | null;
  failure_reason: string | null;
  reached_by: string | null;
  cancelled_by: string | null;
  created_at: Date;
  claimed_at: Date | null;
  executed_at: Date | null;
  cancelled_at: Date | null;
  failed_at: Date | null;
  restored_by: string | null;
}

export async function effectsByIds(db: Db, ids: readonly string[]): Promise<EffectRow[]> {
  if (ids.length === 0) return [];
  return (await db.selectFrom('effects').selectAll().where('id', 'in', ids as string[]).execute()) as EffectRow[];
}

export async function lockEffect(db: Db, id: string): Promise<EffectRow | undefined> {
  return (await db.selectFrom('effects').selectAll().where('id', '=', id).forUpdate().executeTakeFirst()) as EffectRow | undefined;
}

export async function effectByKey(db: Db, fleet: string, key: string): Promise<EffectRow | undefined> {
  return (await db.selectFrom('effects').selectAll().where('fleet_id', '=', fleet).where('idempotency_key', '=', key).executeTakeFirst()) as
    | EffectRow
    | undefined;
}
