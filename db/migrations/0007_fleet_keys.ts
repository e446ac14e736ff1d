import { type Kysely, sql } from 'kysely';

/**
 * Every key of a fleet-owned table starts with `fleet_id`, on every engine.
 *
 * Why: a distributed engine (Citus, docs/citus.md) places each fleet's rows on one node by `fleet_id`, and can only
 * enforce a primary key, a unique constraint or a foreign key there when it contains that column. Keeping the same
 * keys on PGlite and PostgreSQL keeps one schema and one set of statements correct on all of them; there it changes
 * no behaviour (every row already carries its fleet, and RLS already confines a transaction to one).
 *
 * What:
 *  - primary keys `(fleet_id, id)` (`(fleet_id, justification_id, premise_id)`, `(fleet_id, effect_id, belief_id)`,
 *    `(fleet_id, seq)`), keeping the default names `<table>_pkey`;
 *  - every foreign key between fleet-owned tables composite, `(fleet_id, x) REFERENCES t(fleet_id, id)`, under its
 *    old name; so a row can no longer point into another fleet, which only RLS prevented before;
 *  - `retractions_root` and `reversals`' one-reversal-per-effect rule scoped to the fleet;
 *  - the one global uniqueness, a token names exactly one agent, moves from `agents.token_hash` to `agent_tokens`
 *    (a small table that is not split by fleet: a Citus reference table). One token per agent, as before.
 *    `retract_authenticate` reads it, then the agent by its full key; plpgsql, because Citus cannot plan a LANGUAGE
 *    sql function with parameters over distributed tables (docs/citus.md, item 2).
 *
 * The foreign keys are found in the catalog rather than listed, so none is missed; the ones to `fleets` stay.
 */
const ID_TABLES = ['agents', 'retractions', 'beliefs', 'justifications', 'effects', 'reversals', 'contradictions'];
const LINK_KEYS: Record<string, string> = {
  justification_premises: 'fleet_id, justification_id, premise_id',
  effect_supports: 'fleet_id, effect_id, belief_id',
  events: 'fleet_id, seq',
};

interface ForeignKey { table: string; name: string; def: string }

async function foreignKeys(db: Kysely<any>): Promise<ForeignKey[]> {
  const r = await sql<ForeignKey>`
    SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS def
      FROM pg_constraint c
     WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace AND c.confrelid <> 'fleets'::regclass
     ORDER BY 1, 2`.execute(db);
  return r.rows;
}

export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  const fks = (await foreignKeys(db)).filter((fk) => !/^FOREIGN KEY \([^)]*\bfleet_id\b/.test(fk.def));
  for (const fk of fks) await ddl(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);

  for (const t of ID_TABLES) await ddl(`ALTER TABLE ${t} DROP CONSTRAINT ${t}_pkey, ADD PRIMARY KEY (fleet_id, id)`);
  for (const [t, cols] of Object.entries(LINK_KEYS)) await ddl(`ALTER TABLE ${t} DROP CONSTRAINT ${t}_pkey, ADD PRIMARY KEY (${cols})`);
  await ddl(`DROP INDEX retractions_root`);
  await ddl(`CREATE UNIQUE INDEX retractions_root ON retractions (fleet_id, root_id)`);
  await ddl(`ALTER TABLE reversals DROP CONSTRAINT reversals_effect_id_key, ADD CONSTRAINT reversals_fleet_id_effect_id_key UNIQUE (fleet_id, effect_id)`);

  for (const fk of fks) {
    const m = /^FOREIGN KEY \(([^)]*)\) REFERENCES (\w+)\(([^)]*)\)(.*)$/.exec(fk.def);
    if (!m) throw new Error(`0007: unexpected foreign key ${fk.table}.${fk.name}: ${fk.def}`);
    const [, cols, target, targetCols, rest] = m;
    await ddl(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${fk.name} FOREIGN KEY (fleet_id, ${cols}) REFERENCES ${target}(fleet_id, ${targetCols})${rest}`);
  }

  await ddl(`CREATE TABLE agent_tokens (
    token_hash text PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    agent_id bigint NOT NULL,
    UNIQUE (fleet_id, agent_id)
  )`);
  await ddl(`INSERT INTO agent_tokens (token_hash, fleet_id, agent_id) SELECT token_hash, fleet_id, id FROM agents`);
  await ddl(`ALTER TABLE agents DROP COLUMN token_hash`);
  await ddl(`ALTER TABLE agent_tokens ENABLE ROW LEVEL SECURITY`);
  await ddl(`ALTER TABLE agent_tokens FORCE ROW LEVEL SECURITY`);
  await ddl(`CREATE POLICY agent_tokens_fleet ON agent_tokens USING (fleet_id = current_setting('retract.fleet', true)) WITH CHECK (fleet_id = current_setting('retract.fleet', true))`);
  await ddl(`REVOKE ALL ON agent_tokens FROM PUBLIC`);
  // An agent's token is written in its fleet's transaction; it is read across fleets only by retract_authenticate.
  await ddl(`GRANT SELECT, INSERT, UPDATE ON agent_tokens TO retract_app`);

  await ddl(`CREATE OR REPLACE FUNCTION retract_authenticate(p_token_hash text)
    RETURNS TABLE (id bigint, fleet_id text, name text, scopes text[], operator boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
    DECLARE
      v_fleet text;
      v_agent bigint;
    BEGIN
      SELECT t.fleet_id, t.agent_id INTO v_fleet, v_agent FROM agent_tokens t WHERE t.token_hash = p_token_hash;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      RETURN QUERY SELECT a.id, a.fleet_id, a.name, a.scopes, a.operator FROM agents a WHERE a.fleet_id = v_fleet AND a.id = v_agent;
    END
    $$`);
}

export async function down(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`CREATE OR REPLACE FUNCTION retract_authenticate(p_token_hash text)
    RETURNS TABLE (id bigint, fleet_id text, name text, scopes text[], operator boolean)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT a.id, a.fleet_id, a.name, a.scopes, a.operator FROM agents a WHERE a.token_hash = p_token_hash
    $$`);
  await ddl(`ALTER TABLE agents ADD COLUMN token_hash text`);
  await ddl(`UPDATE agents a SET token_hash = t.token_hash FROM agent_tokens t WHERE t.fleet_id = a.fleet_id AND t.agent_id = a.id`);
  await ddl(`ALTER TABLE agents ALTER COLUMN token_hash SET NOT NULL, ADD CONSTRAINT agents_token_hash_key UNIQUE (token_hash)`);
  await ddl(`DROP TABLE agent_tokens`);

  const fks = (await foreignKeys(db)).filter((fk) => /^FOREIGN KEY \(fleet_id, /.test(fk.def) && !/REFERENCES (claims|effect_kinds)\(/.test(fk.def));
  for (const fk of fks) await ddl(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${fk.name}`);
  await ddl(`ALTER TABLE reversals DROP CONSTRAINT reversals_fleet_id_effect_id_key, ADD CONSTRAINT reversals_effect_id_key UNIQUE (effect_id)`);
  await ddl(`DROP INDEX retractions_root`);
  await ddl(`CREATE UNIQUE INDEX retractions_root ON retractions (root_id)`);
  for (const [t, cols] of Object.entries(LINK_KEYS)) await ddl(`ALTER TABLE ${t} DROP CONSTRAINT ${t}_pkey, ADD PRIMARY KEY (${cols.replace('fleet_id, ', '')})`);
  for (const t of ID_TABLES) await ddl(`ALTER TABLE ${t} DROP CONSTRAINT ${t}_pkey, ADD PRIMARY KEY (id)`);
  for (const fk of fks) {
    const m = /^FOREIGN KEY \(fleet_id, ([^)]*)\) REFERENCES (\w+)\(fleet_id, ([^)]*)\)(.*)$/.exec(fk.def)!;
    await ddl(`ALTER TABLE ${fk.table} ADD CONSTRAINT ${fk.name} FOREIGN KEY (${m[1]}) REFERENCES ${m[2]}(${m[3]})${m[4]}`);
  }
}
