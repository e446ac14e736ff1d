import { type Kysely, sql } from 'kysely';

/**
 * Reinstatement: taking a retraction back (src/reinstatement/).
 *
 * - `reinstatements`: one per retraction at most (the mutation is idempotent), its receipt: status
 *   (REINSTATED, or BLOCKED while its root's claim holds another ACTIVE belief), the beliefs brought
 *   back in reverse-cascade order (two arrays, one row: 100k beliefs cost no 100k-row insert), the
 *   effects the retraction cancelled that may be restored, and the contradictions it raised.
 * - `reinstatement_money`: one line per reversal the reinstatement named: VOIDED (OWED never sent,
 *   or UNREACHABLE), IN_FLIGHT (DISPATCHED when it ran; the dispatcher records the provider's
 *   outcome), REEXECUTION_OWED (CONFIRMED: the money came back and should not have; a key derived
 *   from the reversal key, unique in the fleet, so it is recorded once).
 * - reversals gain VOIDED; a reinstated retraction no longer holds its root, so the root may be
 *   retracted again: the unique root index becomes partial (live retractions only).
 * - effects gain `restored_by` (restoreEffect re-queued them PENDING); contradictions gain the
 *   reinstatement (and the retracted belief) they were raised for.
 *
 * New tables follow the co-location rule: fleet_id first in every key and foreign key. The unique
 * (fleet_id, id) keys they reference are made here when the tables do not have them yet.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);

  for (const t of ['agents', 'beliefs', 'effects', 'reversals', 'retractions', 'contradictions']) {
    await ddl(`DO $$ BEGIN
      IF NOT EXISTS (
        SELECT 1 FROM pg_index i
         WHERE i.indrelid = '${t}'::regclass AND i.indisunique AND i.indnkeyatts = 2 AND i.indpred IS NULL
           AND (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                  JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum) = ARRAY['fleet_id', 'id']) THEN
        ALTER TABLE ${t} ADD CONSTRAINT ${t}_fleet_id_id_key UNIQUE (fleet_id, id);
      END IF;
    END $$`);
  }

  await ddl(`ALTER TABLE reversals DROP CONSTRAINT IF EXISTS reversals_status_check`);
  await ddl(`ALTER TABLE reversals ADD CONSTRAINT reversals_status_check
    CHECK (status IN ('OWED', 'DISPATCHED', 'CONFIRMED', 'FAILED', 'UNREACHABLE', 'VOIDED'))`);

  await ddl(`ALTER TABLE retractions ADD COLUMN reinstated_at timestamptz`);
  await ddl(`DROP INDEX IF EXISTS retractions_root`);
  await ddl(`CREATE UNIQUE INDEX retractions_root_live ON retractions (fleet_id, root_id) WHERE reinstated_at IS NULL`);

  await ddl(`CREATE TABLE reinstatements (
    fleet_id text NOT NULL REFERENCES fleets(id),
    id bigint GENERATED ALWAYS AS IDENTITY,
    retraction_id bigint NOT NULL,
    status text NOT NULL CHECK (status IN ('REINSTATED', 'BLOCKED')),
    reason text NOT NULL,
    actor_id bigint NOT NULL,
    contradiction_id bigint,
    belief_ids bigint[] NOT NULL DEFAULT '{}',
    belief_depths integer[] NOT NULL DEFAULT '{}',
    restorable_effect_ids bigint[] NOT NULL DEFAULT '{}',
    contradiction_ids bigint[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz,
    PRIMARY KEY (fleet_id, id),
    UNIQUE (fleet_id, retraction_id),
    FOREIGN KEY (fleet_id, retraction_id) REFERENCES retractions(fleet_id, id),
    FOREIGN KEY (fleet_id, actor_id) REFERENCES agents(fleet_id, id),
    FOREIGN KEY (fleet_id, contradiction_id) REFERENCES contradictions(fleet_id, id),
    CHECK (cardinality(belief_ids) = cardinality(belief_depths)),
    CHECK ((status = 'REINSTATED') = (completed_at IS NOT NULL)),
    CHECK ((status = 'BLOCKED') = (contradiction_id IS NOT NULL))
  )`);

  await ddl(`CREATE TABLE reinstatement_money (
    fleet_id text NOT NULL REFERENCES fleets(id),
    reinstatement_id bigint NOT NULL,
    reversal_id bigint NOT NULL,
    effect_id bigint NOT NULL,
    line text NOT NULL CHECK (line IN ('VOIDED', 'IN_FLIGHT', 'REEXECUTION_OWED')),
    prior_status text NOT NULL CHECK (prior_status IN ('OWED', 'DISPATCHED', 'CONFIRMED', 'FAILED', 'UNREACHABLE')),
    amount_minor bigint,
    currency text,
    reexecution_key text,
    outcome text CHECK (outcome IN ('CONFIRMED', 'FAILED')),
    outcome_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (fleet_id, reinstatement_id, reversal_id),
    FOREIGN KEY (fleet_id, reinstatement_id) REFERENCES reinstatements(fleet_id, id),
    FOREIGN KEY (fleet_id, reversal_id) REFERENCES reversals(fleet_id, id),
    FOREIGN KEY (fleet_id, effect_id) REFERENCES effects(fleet_id, id),
    UNIQUE (fleet_id, reexecution_key),
    CHECK ((line = 'REEXECUTION_OWED') = (reexecution_key IS NOT NULL)),
    CHECK ((amount_minor IS NULL) = (currency IS NULL)),
    CHECK (outcome IS NULL OR prior_status IN ('DISPATCHED', 'FAILED')),
    CHECK ((outcome IS NULL) = (outcome_at IS NULL))
  )`);
  await ddl(`CREATE INDEX reinstatement_money_reversal ON reinstatement_money (fleet_id, reversal_id)`);

  await ddl(`ALTER TABLE effects ADD COLUMN restored_by bigint`);
  await ddl(`ALTER TABLE effects ADD CONSTRAINT effects_restored_by_fkey FOREIGN KEY (fleet_id, restored_by) REFERENCES reinstatements(fleet_id, id)`);
  await ddl(`ALTER TABLE contradictions ADD COLUMN reinstatement_id bigint`);
  await ddl(`ALTER TABLE contradictions ADD COLUMN reinstates_id bigint`);
  await ddl(`ALTER TABLE contradictions ADD CONSTRAINT contradictions_reinstatement_fkey FOREIGN KEY (fleet_id, reinstatement_id) REFERENCES reinstatements(fleet_id, id)`);
  await ddl(`ALTER TABLE contradictions ADD CONSTRAINT contradictions_reinstates_fkey FOREIGN KEY (fleet_id, reinstates_id) REFERENCES beliefs(fleet_id, id)`);
  await ddl(`ALTER TABLE contradictions ADD CHECK ((reinstatement_id IS NULL) = (reinstates_id IS NULL))`);

  for (const t of ['reinstatements', 'reinstatement_money']) {
    await ddl(`ALTER TABLE ${t} ENABLE ROW LEVEL SECURITY`);
    await ddl(`ALTER TABLE ${t} FORCE ROW LEVEL SECURITY`);
    await ddl(`CREATE POLICY ${t}_fleet ON ${t} USING (fleet_id = current_setting('retract.fleet', true)) WITH CHECK (fleet_id = current_setting('retract.fleet', true))`);
    await ddl(`GRANT SELECT, INSERT, UPDATE ON ${t} TO retract_app`);
    await ddl(`GRANT SELECT ON ${t} TO retract_reader`);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);
  await ddl(`ALTER TABLE contradictions DROP COLUMN IF EXISTS reinstates_id, DROP COLUMN IF EXISTS reinstatement_id`);
  await ddl(`ALTER TABLE effects DROP COLUMN IF EXISTS restored_by`);
  await ddl(`DROP TABLE IF EXISTS reinstatement_money`);
  await ddl(`DROP TABLE IF EXISTS reinstatements`);
  await ddl(`DROP INDEX IF EXISTS retractions_root_live`);
  await ddl(`CREATE UNIQUE INDEX retractions_root ON retractions (root_id)`);
  await ddl(`ALTER TABLE retractions DROP COLUMN IF EXISTS reinstated_at`);
  await ddl(`ALTER TABLE reversals DROP CONSTRAINT IF EXISTS reversals_status_check`);
  await ddl(`ALTER TABLE reversals ADD CONSTRAINT reversals_status_check CHECK (status IN ('OWED', 'DISPATCHED', 'CONFIRMED', 'FAILED', 'UNREACHABLE'))`);
}
