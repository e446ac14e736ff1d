// Result shapes of the documents in operations.ts (only the fields those documents select).

export type BeliefStatus = 'ACTIVE' | 'RETRACTED';
export type EffectStatus = 'PENDING' | 'EXECUTING' | 'EXECUTED' | 'CANCELLED' | 'FAILED';
export type ReversalStatus = 'OWED' | 'DISPATCHED' | 'CONFIRMED' | 'FAILED' | 'UNREACHABLE';

export interface Money {
  amountMinor: number;
  currency: string;
}

export interface AgentRef {
  id: string;
  name: string;
}

export interface Viewer extends AgentRef {
  fleet: string;
  scopes: string[];
}

export interface BeliefRef {
  id: string;
  claimKey: string;
  statement: string;
  status: BeliefStatus;
}

export interface BeliefListItem extends BeliefRef {
  createdAt: string;
  author: AgentRef;
}

export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

export interface BeliefsData {
  beliefs: {
    totalCount: number;
    pageInfo: PageInfo;
    edges: { cursor: string; node: BeliefListItem }[];
  };
}

export interface SearchData {
  search: {
    snapshot: string;
    hits: { score: number; belief: BeliefListItem }[];
  };
}

export interface ReversalRef {
  id: string;
  status: ReversalStatus;
  idempotencyKey: string;
  providerRef?: string | null;
  amount: Money | null;
}

export interface EffectRef {
  id: string;
  kind: string;
  status: EffectStatus;
  idempotencyKey?: string;
  externalRef?: string | null;
  amount: Money | null;
  reversal?: ReversalRef | null;
}

export interface BeliefDetail extends BeliefRef {
  value: unknown;
  evidence: string | null;
  createdAt: string;
  retractedAt: string | null;
  author: AgentRef;
  /** Absent without receipts:read. */
  retraction?: { id: string; reason: string; createdAt: string } | null;
  justifications: { id: string; holds: boolean; premises: BeliefRef[] }[];
  dependents: {
    totalCount: number;
    pageInfo: PageInfo;
    edges: { node: BeliefRef }[];
  };
  /** Absent without an effects scope or receipts:read. */
  effects?: EffectRef[];
}

export interface NeighborhoodData {
  belief: BeliefDetail | null;
}

export interface Totals {
  beliefsRetracted: number;
  effectsCancelled: number;
  effectsReached: number;
  reversalsOwed: number;
  unreachable: number;
  exposure: Money[];
  owed: Money[];
  unreachableAmount: Money[];
  settled: Money[];
}

export interface Preview {
  root: { id: string; claimKey: string };
  beliefs: {
    totalCount: number;
    pageInfo: PageInfo;
    edges: { node: BeliefRef }[];
  };
  survivors: BeliefRef[];
  /** Absent without an effects scope or receipts:read. */
  pendingEffects?: EffectRef[];
  executedEffects?: EffectRef[];
  /** Absent without receipts:read. */
  totals?: Totals;
}

export interface PreviewData {
  previewRetraction: Preview;
}

export interface ReceiptCore {
  id: string;
  reason: string;
  createdAt?: string;
  root: { id: string; claimKey: string };
  actor: AgentRef;
  totals: Totals;
}

export interface RetractionResult extends ReceiptCore {
  beliefs: { totalCount: number; edges: { node: { id: string; claimKey: string; status: BeliefStatus } }[] };
  cancelledEffects?: { id: string; status: EffectStatus }[];
  reversals?: (ReversalRef & { effect: { id: string } })[];
}

export interface RetractData {
  retractBelief: RetractionResult;
}

export interface ReceiptData {
  retraction: ReceiptCore | null;
}

interface EventBase {
  cursor: string;
  at: string;
  retraction: { id: string; reason: string; root: { id: string; claimKey: string }; actor: AgentRef };
}

export interface RetractionStartedEvent extends EventBase {
  __typename: 'RetractionStarted';
}
export interface BeliefRetractedEvent extends EventBase {
  __typename: 'BeliefRetracted';
  depth: number;
  belief: BeliefRef;
}
export interface EffectCancelledEvent extends EventBase {
  __typename: 'EffectCancelled';
  effect: EffectRef;
}
export interface ReversalRecordedEvent extends EventBase {
  __typename: 'ReversalRecorded';
  reversal: ReversalRef & { effect: { id: string; kind: string; status: EffectStatus } };
}
export interface RetractionCommittedEvent extends EventBase {
  __typename: 'RetractionCommitted';
  totals: Totals;
}
/** Any other implementation the server may add later: shown in the feed, otherwise ignored. */
export interface UnknownEvent extends EventBase {
  __typename: string;
}

export type KnownRetractionEvent =
  | RetractionStartedEvent
  | BeliefRetractedEvent
  | EffectCancelledEvent
  | ReversalRecordedEvent
  | RetractionCommittedEvent;

export type RetractionEvent = KnownRetractionEvent | UnknownEvent;

export interface RetractionEventsData {
  retractionEvents: RetractionEvent;
}
