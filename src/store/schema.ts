import type { ColumnType, Generated } from 'kysely';

/** Kysely's view of the tables in db/migrations. int8 columns arrive as strings from pg. */
type Id = ColumnType<string, string | number | bigint, string | number | bigint>;
type GeneratedId = ColumnType<string, never, never>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

interface FleetTable {
  id: string;
  created_at: Generated<Date>;
}
export interface AgentTable {
  id: GeneratedId;
  fleet_id: string;
  name: string;
  scopes: string[];
  operator: ColumnType<boolean, boolean | undefined, boolean>;
  created_by: Id | null;
  created_at: Generated<Date>;
}
/** The one cross-fleet uniqueness: a token names one agent (db/migrations/0007_fleet_keys.ts). */
interface AgentTokenTable {
  token_hash: string;
  fleet_id: string;
  agent_id: Id;
}
interface ClaimTable {
  fleet_id: string;
  key: string;
  version: ColumnType<string, string | number | undefined, string | number>;
  last_tx: string | null;
}
export interface RetractionTable {
  id: GeneratedId;
  fleet_id: string;
  root_id: Id;
  reason: string;
  actor_id: Id;
  beliefs_retracted: ColumnType<number, number | undefined, number>;
  created_at: Generated<Date>;
  reinstated_at: NullableTimestamp;
}
export interface BeliefTable {
  id: GeneratedId;
  fleet_id: string;
  claim_key: string;
  statement: string;
  value: ColumnType<unknown, string | null, string | null>;
  evidence: string | null;
  author_id: Id;
  grounded: boolean;
  status: Generated<'ACTIVE' | 'RETRACTED'>;
  embedding: string;
  created_at: Generated<Date>;
  retracted_at: NullableTimestamp;
  retraction_id: Id | null;
  retraction_depth: number | null;
}
interface JustificationTable {
  id: GeneratedId;
  fleet_id: string;
  belief_id: Id;
  created_by: Id;
  created_at: Generated<Date>;
}
interface JustificationPremiseTable {
  justification_id: Id;
  premise_id: Id;
  fleet_id: string;
}
interface EffectKindTable {
  fleet_id: string;
  kind: string;
  reversible: boolean;
  created_at: Generated<Date>;
}
export type EffectStatus = 'PENDING' | 'EXECUTING' | 'EXECUTED' | 'CANCELLED' | 'FAILED';
export interface EffectTable {
  id: GeneratedId;
  fleet_id: string;
  kind: string;
  status: Generated<EffectStatus>;
  amount_minor: Id | null;
  currency: string | null;
  payload: ColumnType<unknown, string | null, string | null>;
  idempotency_key: string;
  proposed_by: Id;
  claimed_by: Id | null;
  external_ref: string | null;
  failure_reason: string | null;
  reached_by: Id | null;
  cancelled_by: Id | null;
  created_at: Generated<Date>;
  claimed_at: NullableTimestamp;
  executed_at: NullableTimestamp;
  cancelled_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  restored_by: Id | null;
}
interface EffectSupportTable {
  effect_id: Id;
  belief_id: Id;
  fleet_id: string;
}
export type ReversalStatus = 'OWED' | 'DISPATCHED' | 'CONFIRMED' | 'FAILED' | 'UNREACHABLE' | 'VOIDED';
export interface ReversalTable {
  id: GeneratedId;
  fleet_id: string;
  effect_id: Id;
  retraction_id: Id;
  status: ReversalStatus;
  idempotency_key: string;
  amount_minor: Id | null;
  currency: string | null;
  reason: string | null;
  provider_ref: string | null;
  attempts: Generated<number>;
  lease_expires_at: NullableTimestamp;
  created_at: Generated<Date>;
  dispatched_at: NullableTimestamp;
  confirmed_at: NullableTimestamp;
  failed_at: NullableTimestamp;
  /** From 0002_dispatch: the dispatcher holding the lease, and the provider's last inconclusive answer. */
  lease_holder: string | null;
  last_error: string | null;
}
export type ContradictionStatus = 'OPEN' | 'ADJUDICATING' | 'RESOLVED';
type Verdict = 'KEEP_EXISTING' | 'ACCEPT_PROPOSED' | 'ESCALATE';
export interface ContradictionTable {
  id: GeneratedId;
  fleet_id: string;
  claim_key: string;
  existing_id: Id;
  proposed_statement: string;
  proposed_value: ColumnType<unknown, string | null, string | null>;
  proposed_evidence: string | null;
  proposed_author_id: Id;
  proposed_derived_from: ColumnType<string[], string[] | undefined, string[]>;
  status: Generated<ContradictionStatus>;
  verdict: Verdict | null;
  rationale: string | null;
  adjudicator: string | null;
  resolution_id: Id | null;
  accepted_id: Id | null;
  created_at: Generated<Date>;
  resolved_at: NullableTimestamp;
  reinstatement_id: Id | null;
  reinstates_id: Id | null;
}
interface AdjudicationLeaseTable {
  fleet_id: string;
  claim_key: string;
  contradiction_id: Id;
  holder: string;
  fencing_token: Id;
  expires_at: Timestamp;
}
interface EventTable {
  seq: GeneratedId;
  tx: ColumnType<string, never, never>;
  fleet_id: string;
  type: string;
  retraction_id: Id | null;
  depth: number | null;
  ids: ColumnType<string[], string[] | undefined, never>;
  data: ColumnType<unknown, string | null | undefined, never>;
  actor_id: Id | null;
  at: Generated<Date>;
}
type ReinstatementStatus = 'REINSTATED' | 'BLOCKED';
export interface ReinstatementTable {
  fleet_id: string;
  id: GeneratedId;
  retraction_id: Id;
  status: ReinstatementStatus;
  reason: string;
  actor_id: Id;
  contradiction_id: Id | null;
  belief_ids: ColumnType<string[], string | undefined, string>;
  belief_depths: ColumnType<number[], string | undefined, string>;
  restorable_effect_ids: ColumnType<string[], string | undefined, string>;
  contradiction_ids: ColumnType<string[], string | undefined, string>;
  created_at: Generated<Date>;
  completed_at: NullableTimestamp;
}
type MoneyLine = 'VOIDED' | 'IN_FLIGHT' | 'REEXECUTION_OWED';
export interface ReinstatementMoneyTable {
  fleet_id: string;
  reinstatement_id: Id;
  reversal_id: Id;
  effect_id: Id;
  line: MoneyLine;
  prior_status: Exclude<ReversalStatus, 'VOIDED'>;
  amount_minor: Id | null;
  currency: string | null;
  reexecution_key: string | null;
  outcome: 'CONFIRMED' | 'FAILED' | null;
  outcome_at: NullableTimestamp;
  created_at: Generated<Date>;
}
/** Closed RETRACTED intervals [retracted_at, reinstated_at), one per reinstated belief (db/migrations/0009_belief_history.ts). */
interface BeliefStatusHistoryTable {
  fleet_id: string;
  belief_id: Id;
  retraction_id: Id;
  retraction_depth: number;
  retracted_at: Timestamp;
  reinstatement_id: Id;
  reinstated_by: Id;
  reinstated_at: Timestamp;
}
interface StoreMetaTable {
  key: string;
  value: string;
}

export interface DB {
  store_meta: StoreMetaTable;
  fleets: FleetTable;
  agents: AgentTable;
  agent_tokens: AgentTokenTable;
  claims: ClaimTable;
  retractions: RetractionTable;
  beliefs: BeliefTable;
  justifications: JustificationTable;
  justification_premises: JustificationPremiseTable;
  effect_kinds: EffectKindTable;
  effects: EffectTable;
  effect_supports: EffectSupportTable;
  reversals: ReversalTable;
  contradictions: ContradictionTable;
  adjudication_leases: AdjudicationLeaseTable;
  events: EventTable;
  reinstatements: ReinstatementTable;
  reinstatement_money: ReinstatementMoneyTable;
  belief_status_history: BeliefStatusHistoryTable;
}
