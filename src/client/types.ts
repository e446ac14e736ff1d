/** The API's shapes as an agent sees them (ids are global ids; money in integer minor units). */
export interface Money { amountMinor: number; currency: string }
export interface Agent { id: string; name: string; fleet: string; scopes: string[] }
export type BeliefStatus = 'ACTIVE' | 'RETRACTED';
export interface Belief { id: string; claimKey: string; statement: string; value: unknown; status: BeliefStatus; evidence: string | null; createdAt: string }
export interface SearchInput { text: string; k?: number; includeRetracted?: boolean; claimKeyPrefix?: string | null }
export interface SearchResult { snapshot: string; hits: Array<{ score: number; belief: Belief }> }
export interface AssertBeliefInput { claimKey: string; statement: string; value?: unknown; evidence?: string | null; derivedFrom?: string[] | null; basedOn?: string | null }
export type AssertBeliefResult =
  | { __typename: 'BeliefAsserted'; belief: Belief }
  | { __typename: 'BeliefCorroborated'; belief: Belief }
  | { __typename: 'ContradictionRaised'; contradiction: { id: string; status: string; existing: Belief } }
  | { __typename: 'PremiseRetracted'; premise: Belief }
  | { __typename: 'ClaimChangedSinceRead'; claimKey: string; current: Belief | null };
export interface Totals {
  beliefsRetracted: number; effectsCancelled: number; effectsReached: number; reversalsOwed: number; unreachable: number;
  exposure: Money[]; owed: Money[]; unreachableAmount: Money[]; settled: Money[];
}
export interface Retraction { id: string; reason: string; root: { id: string; claimKey: string }; totals: Totals }
export type EffectStatus = 'PENDING' | 'EXECUTING' | 'EXECUTED' | 'CANCELLED' | 'FAILED';
export interface Effect { id: string; kind: string; status: EffectStatus; idempotencyKey: string; amount: Money | null; externalRef: string | null }
export interface ProposeEffectInput { kind: string; amount?: Money | null; payload?: unknown; supportedBy: string[]; idempotencyKey: string }
export type ProposeEffectResult = { __typename: 'EffectProposed'; effect: Effect } | { __typename: 'PremiseRetracted'; premise: Belief };
export interface Reversal { id: string; status: string; idempotencyKey: string; amount: Money | null; providerRef: string | null }
export interface RetractionEvent {
  __typename: 'RetractionStarted' | 'BeliefRetracted' | 'EffectCancelled' | 'ReversalRecorded' | 'RetractionCommitted'
    | 'BeliefsRetracted' | 'EffectsCancelled' | 'ReversalsRecorded';
  cursor: string; at: string; retraction: { id: string };
  depth?: number; belief?: { id: string; claimKey: string }; effect?: { id: string; status: string }; reversal?: { id: string; status: string };
  /** granularity LEVEL: the items of one level and kind (at most 500). */
  count?: number; beliefs?: Array<{ id: string; claimKey: string }>; effects?: Array<{ id: string; status: string }>; reversals?: Array<{ id: string; status: string }>;
  totals?: Totals;
}
/** BELIEF: an event per item (the default). LEVEL: an event per cascade level and kind. */
export type RetractionEventGranularity = 'BELIEF' | 'LEVEL';
