import { type Kysely, sql } from 'kysely';

/**
 * The whole core schema. Every fleet-owned row carries `fleet_id`; row-level security keyed on the
 * per-transaction setting `retract.fleet` keeps each fleet to its own rows, and FORCE ROW LEVEL
 * SECURITY makes the policy bind the table owner too. The application runs its queries as the
 * role `retract_app` (SET LOCAL ROLE, done by src/store/tx.ts), which is neither superuser nor owner.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const ddl = (q: string) => sql.raw(q).execute(db);

  await ddl(`CREATE EXTENSION IF NOT EXISTS vector`);
  // Roles are cluster-wide: create them once, tolerate a concurrent creator.
  for (const role of ['retract_app', 'retract_reader']) {
    await ddl(`DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN
        CREATE ROLE ${role} NOLOGIN NOSUPERUSER NOBYPASSRLS;
      END IF;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$`);
    await ddl(`DO $$ BEGIN
      IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT ${role} TO %I', current_user);
      END IF;
    END $$`);
  }

  await ddl(`CREATE TABLE store_meta (
    key text PRIMARY KEY,
    value text NOT NULL
  )`);

  await ddl(`CREATE TABLE fleets (
    id text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
    created_at timestamptz NOT NULL DEFAULT now()
  )`);

  await ddl(`CREATE TABLE agents (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    name text NOT NULL,
    token_hash text NOT NULL UNIQUE,
    scopes text[] NOT NULL,
    operator boolean NOT NULL DEFAULT false,
    created_by bigint REFERENCES agents(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (fleet_id, name)
  )`);

  await ddl(`CREATE TABLE claims (
    fleet_id text NOT NULL REFERENCES fleets(id),
    key text NOT NULL,
    version bigint NOT NULL DEFAULT 0,
    last_tx xid8,
    PRIMARY KEY (fleet_id, key)
  )`);

  await ddl(`CREATE TABLE retractions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    root_id bigint NOT NULL,
    reason text NOT NULL,
    actor_id bigint NOT NULL REFERENCES agents(id),
    beliefs_retracted integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
  )`);

  await ddl(`CREATE TABLE beliefs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    claim_key text NOT NULL,
    statement text NOT NULL,
    value jsonb,
    evidence text,
    author_id bigint NOT NULL REFERENCES agents(id),
    grounded boolean NOT NULL,
    status text NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'RETRACTED')),
    embedding vector(512) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    retracted_at timestamptz,
    retraction_id bigint REFERENCES retractions(id),
    retraction_depth integer,
    CHECK ((status = 'RETRACTED') = (retraction_id IS NOT NULL)),
    CHECK ((retraction_id IS NULL) = (retraction_depth IS NULL)),
    FOREIGN KEY (fleet_id, claim_key) REFERENCES claims(fleet_id, key)
  )`);
  await ddl(`ALTER TABLE retractions ADD FOREIGN KEY (root_id) REFERENCES beliefs(id)`);
  await ddl(`CREATE UNIQUE INDEX retractions_root ON retractions (root_id)`);
  await ddl(`CREATE INDEX retractions_fleet ON retractions (fleet_id, id DESC)`);
  // Invariant 1, held by the database itself.
  await ddl(`CREATE UNIQUE INDEX beliefs_one_active_per_claim ON beliefs (fleet_id, claim_key) WHERE status = 'ACTIVE'`);
  await ddl(`CREATE INDEX beliefs_claim ON beliefs (fleet_id, claim_key text_pattern_ops, id DESC)`);
  await ddl(`CREATE INDEX beliefs_fleet_recent ON beliefs (fleet_id, id DESC)`);
  await ddl(`CREATE INDEX beliefs_retraction ON beliefs (retraction_id, retraction_depth, id) WHERE retraction_id IS NOT NULL`);
  await ddl(`CREATE INDEX beliefs_embedding ON beliefs USING hnsw (embedding vector_cosine_ops)`);

  await ddl(`CREATE TABLE justifications (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    belief_id bigint NOT NULL REFERENCES beliefs(id),
    created_by bigint NOT NULL REFERENCES agents(id),
    created_at timestamptz NOT NULL DEFAULT now()
  )`);
  await ddl(`CREATE INDEX justifications_belief ON justifications (belief_id)`);
  await ddl(`CREATE TABLE justification_premises (
    justification_id bigint NOT NULL REFERENCES justifications(id),
    premise_id bigint NOT NULL REFERENCES beliefs(id),
    fleet_id text NOT NULL REFERENCES fleets(id),
    PRIMARY KEY (justification_id, premise_id)
  )`);
  await ddl(`CREATE INDEX justification_premises_premise ON justification_premises (premise_id, justification_id)`);

  await ddl(`CREATE TABLE effect_kinds (
    fleet_id text NOT NULL REFERENCES fleets(id),
    kind text NOT NULL,
    reversible boolean NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (fleet_id, kind)
  )`);

  await ddl(`CREATE TABLE effects (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    kind text NOT NULL,
    status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'EXECUTING', 'EXECUTED', 'CANCELLED', 'FAILED')),
    amount_minor bigint CHECK (amount_minor > 0),
    currency text CHECK (currency ~ '^[A-Z]{3}$'),
    payload jsonb,
    idempotency_key text NOT NULL,
    proposed_by bigint NOT NULL REFERENCES agents(id),
    claimed_by bigint REFERENCES agents(id),
    external_ref text,
    failure_reason text,
    reached_by bigint REFERENCES retractions(id),
    cancelled_by bigint REFERENCES retractions(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    claimed_at timestamptz,
    executed_at timestamptz,
    cancelled_at timestamptz,
    failed_at timestamptz,
    CHECK ((amount_minor IS NULL) = (currency IS NULL)),
    CHECK ((status = 'CANCELLED') = (cancelled_by IS NOT NULL)),
    CHECK (status <> 'EXECUTED' OR external_ref IS NOT NULL),
    UNIQUE (fleet_id, idempotency_key),
    FOREIGN KEY (fleet_id, kind) REFERENCES effect_kinds(fleet_id, kind)
  )`);
  await ddl(`CREATE INDEX effects_ready ON effects (fleet_id, id) WHERE status = 'PENDING'`);
  await ddl(`CREATE INDEX effects_fleet_status ON effects (fleet_id, status, id DESC)`);
  await ddl(`CREATE INDEX effects_cancelled_by ON effects (cancelled_by) WHERE cancelled_by IS NOT NULL`);
  await ddl(`CREATE TABLE effect_supports (
    effect_id bigint NOT NULL REFERENCES effects(id),
    belief_id bigint NOT NULL REFERENCES beliefs(id),
    fleet_id text NOT NULL REFERENCES fleets(id),
    PRIMARY KEY (effect_id, belief_id)
  )`);
  await ddl(`CREATE INDEX effect_supports_belief ON effect_supports (belief_id, effect_id)`);

  await ddl(`CREATE TABLE reversals (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    effect_id bigint NOT NULL UNIQUE REFERENCES effects(id),
    retraction_id bigint NOT NULL REFERENCES retractions(id),
    status text NOT NULL CHECK (status IN ('OWED', 'DISPATCHED', 'CONFIRMED', 'FAILED', 'UNREACHABLE')),
    idempotency_key text NOT NULL,
    amount_minor bigint,
    currency text,
    reason text,
    provider_ref text,
    attempts integer NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    dispatched_at timestamptz,
    confirmed_at timestamptz,
    failed_at timestamptz,
    CHECK ((status = 'CONFIRMED') = (provider_ref IS NOT NULL)),
    UNIQUE (fleet_id, idempotency_key)
  )`);
  await ddl(`CREATE INDEX reversals_retraction ON reversals (retraction_id, id)`);
  await ddl(`CREATE INDEX reversals_fleet_status ON reversals (fleet_id, status, id DESC)`);

  await ddl(`CREATE TABLE contradictions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fleet_id text NOT NULL REFERENCES fleets(id),
    claim_key text NOT NULL,
    existing_id bigint NOT NULL REFERENCES beliefs(id),
    proposed_statement text NOT NULL,
    proposed_value jsonb,
    proposed_evidence text,
    proposed_author_id bigint NOT NULL REFERENCES agents(id),
    proposed_derived_from bigint[] NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'OPEN' CHECK (status IN ('OPEN', 'ADJUDICATING', 'RESOLVED')),
    verdict text CHECK (verdict IN ('KEEP_EXISTING', 'ACCEPT_PROPOSED', 'ESCALATE')),
    rationale text,
    adjudicator text,
    resolution_id bigint REFERENCES retractions(id),
    accepted_id bigint REFERENCES beliefs(id),
    created_at timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
  )`);
  await ddl(`CREATE INDEX contradictions_fleet_status ON contradictions (fleet_id, status, id)`);
  await ddl(`CREATE TABLE adjudication_leases (
    fleet_id text NOT NULL REFERENCES fleets(id),
    claim_key text NOT NULL,
    contradiction_id bigint NOT NULL REFERENCES contradictions(id),
    holder text NOT NULL,
    fencing_token bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (fleet_id, claim_key)
  )`);
  await ddl(`CREATE SEQUENCE fencing_tokens`);

  // The ordered event log. `tx` is the writing transaction's id: readers take only rows whose
  // transaction lies below the oldest running one (src/event/event.repository.ts), so an event
  // numbered early but committed late is never skipped. Per-belief events are stored one row per
  // cascade level (`ids`), and streamed one event per id.
  await ddl(`CREATE TABLE events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
    fleet_id text NOT NULL REFERENCES fleets(id),
    type text NOT NULL,
    retraction_id bigint REFERENCES retractions(id),
    depth integer,
    ids bigint[] NOT NULL DEFAULT '{}',
    data jsonb,
    actor_id bigint REFERENCES agents(id),
    at timestamptz NOT NULL DEFAULT now()
  )`);
  await ddl(`CREATE INDEX events_tail ON events (fleet_id, tx, seq)`);
  await ddl(`CREATE INDEX events_order ON events (tx, seq)`);

  const fleetTables = [
    'agents', 'claims', 'retractions', 'beliefs', 'justifications', 'justification_premises',
    'effect_kinds', 'effects', 'effect_supports', 'reversals', 'contradictions', 'adjudication_leases', 'events',
  ];
  for (const t of fleetTables) {
    await ddl(`ALTER TABLE ${t} ENABLE ROW LEVEL SECURITY`);
    await ddl(`ALTER TABLE ${t} FORCE ROW LEVEL SECURITY`);
    await ddl(`CREATE POLICY ${t}_fleet ON ${t} USING (fleet_id = current_setting('retract.fleet', true)) WITH CHECK (fleet_id = current_setting('retract.fleet', true))`);
    await ddl(`GRANT SELECT, INSERT, UPDATE ON ${t} TO retract_app`);
    await ddl(`GRANT SELECT ON ${t} TO retract_reader`);
  }
  await ddl(`GRANT DELETE ON adjudication_leases TO retract_app`);
  await ddl(`ALTER TABLE fleets ENABLE ROW LEVEL SECURITY`);
  await ddl(`ALTER TABLE fleets FORCE ROW LEVEL SECURITY`);
  await ddl(`CREATE POLICY fleets_own ON fleets USING (id = current_setting('retract.fleet', true)) WITH CHECK (id = current_setting('retract.fleet', true))`);
  await ddl(`GRANT SELECT, INSERT ON fleets TO retract_app`);
  await ddl(`GRANT SELECT ON fleets TO retract_reader`);
  await ddl(`GRANT SELECT ON store_meta TO retract_app, retract_reader`);
  await ddl(`GRANT USAGE ON SEQUENCE fencing_tokens TO retract_app`);

  // Authentication happens before the caller's fleet is known: this function, owned by the
  // migrating role, is the one narrow way across fleets. It returns the agent for a token hash.
  await ddl(`CREATE FUNCTION retract_authenticate(p_token_hash text)
    RETURNS TABLE (id bigint, fleet_id text, name text, scopes text[], operator boolean)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
      SELECT a.id, a.fleet_id, a.name, a.scopes, a.operator FROM agents a WHERE a.token_hash = p_token_hash
    $$`);
  await ddl(`REVOKE ALL ON FUNCTION retract_authenticate(text) FROM PUBLIC`);
  await ddl(`GRANT EXECUTE ON FUNCTION retract_authenticate(text) TO retract_app, retract_reader`);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of [
    'events', 'adjudication_leases', 'contradictions', 'reversals', 'effect_supports', 'effects', 'effect_kinds',
    'justification_premises', 'justifications', 'beliefs', 'retractions', 'claims', 'agents', 'fleets', 'store_meta',
  ]) {
    await sql.raw(`DROP TABLE IF EXISTS ${t} CASCADE`).execute(db);
  }
  await sql`DROP SEQUENCE IF EXISTS fencing_tokens`.execute(db);
  await sql`DROP FUNCTION IF EXISTS retract_authenticate(text)`.execute(db);
}
