import { type Selectable, sql } from 'kysely';
import type { AgentTable } from '../store/schema';
import type { Db } from '../store/tx';

/**
 * The SQL of agents and fleets. Every statement names its fleet; the one look-up across fleets,
 * by token, goes through the narrow SECURITY DEFINER function retract_authenticate.
 */

/** An agent as a request knows it: never its token hash. */
export type AgentRow = Pick<Selectable<AgentTable>, 'id' | 'fleet_id' | 'name' | 'scopes' | 'operator'> & {
  created_at?: Date;
};

const AGENT_COLUMNS = ['id', 'fleet_id', 'name', 'scopes', 'operator', 'created_at'] as const;

/** The agent holding the token of this SHA-256 hash, across fleets, or null. */
export async function agentByTokenHash(db: Db, tokenHash: string): Promise<AgentRow | null> {
  const r =
    await sql<AgentRow>`SELECT id::text AS id, fleet_id, name, scopes, operator FROM retract_authenticate(${tokenHash})`.execute(
      db,
    );
  return r.rows[0] ?? null;
}

export async function ensureFleet(db: Db, fleet: string): Promise<void> {
  await db
    .insertInto('fleets')
    .values({ id: fleet })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function agentNamed(db: Db, fleet: string, name: string): Promise<string | null> {
  return (
    (
      await db
        .selectFrom('agents')
        .select('id')
        .where('fleet_id', '=', fleet)
        .where('name', '=', name)
        .executeTakeFirst()
    )?.id ?? null
  );
}

export async function insertAgent(
  db: Db,
  fleet: string,
  a: { name: string; tokenHash: string; scopes: string[]; createdBy: string | null },
): Promise<AgentRow> {
  const row = await db
    .insertInto('agents')
    .values({ fleet_id: fleet, name: a.name, scopes: a.scopes, created_by: a.createdBy })
    .returning(AGENT_COLUMNS)
    .executeTakeFirstOrThrow();
  await holdToken(db, fleet, row.id, a.tokenHash);
  return row;
}

/** Makes the operator agent `name` of `fleet` hold exactly this token hash and scopes. */
export async function upsertOperator(
  db: Db,
  fleet: string,
  a: { name: string; tokenHash: string; scopes: string[] },
): Promise<AgentRow> {
  const row = await db
    .insertInto('agents')
    .values({ fleet_id: fleet, name: a.name, scopes: a.scopes, operator: true })
    .onConflict((oc) => oc.columns(['fleet_id', 'name']).doUpdateSet({ scopes: a.scopes, operator: true }))
    .returning(['id', 'fleet_id', 'name', 'scopes', 'operator'])
    .executeTakeFirstOrThrow();
  await holdToken(db, fleet, row.id, a.tokenHash);
  return row;
}

/** Makes `tokenHash` the agent's one token (agent_tokens: a token names one agent across all fleets). */
async function holdToken(db: Db, fleet: string, agentId: string, tokenHash: string): Promise<void> {
  await db
    .insertInto('agent_tokens')
    .values({ token_hash: tokenHash, fleet_id: fleet, agent_id: agentId })
    .onConflict((oc) => oc.columns(['fleet_id', 'agent_id']).doUpdateSet({ token_hash: tokenHash }))
    .execute();
}

export async function agentsByIds(db: Db, fleet: string, ids: readonly string[]): Promise<AgentRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('agents')
    .select(AGENT_COLUMNS)
    .where('fleet_id', '=', fleet)
    .where('id', 'in', ids as string[])
    .execute();
}

/** The names of these agents, by id. */
export async function agentNames(db: Db, fleet: string, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('agents')
    .select(['id', 'name'])
    .where('fleet_id', '=', fleet)
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Map(rows.map((a) => [a.id, a.name]));
}
