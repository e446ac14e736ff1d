// Every GraphQL document the dashboard sends, written against /work/shared/contract/schema.graphql.
//
// Deliberate choices, so the server's limits never bite:
// - no named fragments and no aliases (graphql-armor counts a fragment spread as extra depth); the shared
//   selections below are plain string constants spliced into each document;
// - `first` is a variable, at most 100 per page: the server's cost multiplies a page's subtree by its `first`,
//   literal or variable (src/server/cost.ts), and these pages stay far below its limit;
// - depth stays ≤ 6 as graphql-armor counts it (inline fragments count as one level), ≤ 5 as plain nesting;
// - a field of a type the viewer's scopes do not open (effects, receipts) is asked for only
//   `@include(if: $canReadEffects / $canReadReceipts)`: the server refuses such a field FORBIDDEN whatever
//   path reaches it, and one refused field would fail the whole request.
// `npx tsx dashboard/scripts/check-operations.ts` validates every document against the contract and measures
// it with the server's limits: armor's depth and alias rules, the server's own cost rule at `first: 100`, tokens.

const MONEY = 'amountMinor currency';

const TOTALS = `beliefsRetracted effectsCancelled effectsReached reversalsOwed unreachable
      exposure { ${MONEY} } owed { ${MONEY} } unreachableAmount { ${MONEY} } settled { ${MONEY} }`;

const BELIEF_LIST_FIELDS = 'id claimKey statement status createdAt author { id name }';

export const VIEWER = /* GraphQL */ `query Viewer {
  viewer { id name fleet scopes }
}`;

export const BELIEFS = /* GraphQL */ `query Beliefs($claimKeyPrefix: String, $status: BeliefStatus, $first: Int, $after: String) {
  beliefs(claimKeyPrefix: $claimKeyPrefix, status: $status, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { cursor node { ${BELIEF_LIST_FIELDS} } }
  }
}`;

export const SEARCH = /* GraphQL */ `query Search($input: SearchInput!) {
  search(input: $input) {
    snapshot
    hits { score belief { ${BELIEF_LIST_FIELDS} } }
  }
}`;

/** One belief with one level in each direction: premises (via justifications), dependents, effects. */
export const BELIEF_NEIGHBORHOOD = /* GraphQL */ `query BeliefNeighborhood($id: ID!, $dependentsFirst: Int, $canReadEffects: Boolean!, $canReadReceipts: Boolean!) {
  belief(id: $id) {
    id claimKey statement status value evidence createdAt retractedAt
    author { id name }
    retraction @include(if: $canReadReceipts) { id reason createdAt }
    justifications { id holds premises { id claimKey statement status } }
    dependents(first: $dependentsFirst) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id claimKey statement status } }
    }
    effects @include(if: $canReadEffects) {
      id kind status idempotencyKey externalRef
      amount { ${MONEY} }
      reversal @include(if: $canReadReceipts) { id status idempotencyKey providerRef amount { ${MONEY} } }
    }
  }
}`;

export const PREVIEW_RETRACTION = /* GraphQL */ `query PreviewRetraction($beliefId: ID!, $first: Int, $after: String, $canReadEffects: Boolean!, $canReadReceipts: Boolean!) {
  previewRetraction(beliefId: $beliefId) {
    root { id claimKey }
    beliefs(first: $first, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges { node { id claimKey statement status } }
    }
    survivors { id claimKey statement status }
    pendingEffects @include(if: $canReadEffects) { id kind status amount { ${MONEY} } }
    executedEffects @include(if: $canReadEffects) { id kind status amount { ${MONEY} } }
    totals @include(if: $canReadReceipts) { ${TOTALS} }
  }
}`;

// The receipt and its totals are the retractor's own answer (readable without receipts:read); what it lists is not.
export const RETRACT_BELIEF = /* GraphQL */ `mutation RetractBelief($input: RetractBeliefInput!, $first: Int, $canReadEffects: Boolean!, $canReadReceipts: Boolean!) {
  retractBelief(input: $input) {
    id reason createdAt
    root { id claimKey }
    actor { id name }
    totals { ${TOTALS} }
    beliefs(first: $first) { totalCount edges { node { id claimKey status } } }
    cancelledEffects @include(if: $canReadEffects) { id status }
    reversals @include(if: $canReadReceipts) { id status idempotencyKey amount { ${MONEY} } effect { id } }
  }
}`;

export const RETRACTION_RECEIPT = /* GraphQL */ `query RetractionReceipt($id: ID!) {
  retraction(id: $id) {
    id reason createdAt
    root { id claimKey }
    actor { id name }
    totals { ${TOTALS} }
  }
}`;

/** The live feed. `after` is the last cursor seen; null means "from now". Dispatch is on __typename. */
export const RETRACTION_EVENTS = /* GraphQL */ `subscription RetractionEvents($after: String) {
  retractionEvents(after: $after) {
    __typename
    cursor
    at
    retraction { id reason root { id claimKey } actor { id name } }
    ... on BeliefRetracted { depth belief { id claimKey statement status } }
    ... on EffectCancelled { effect { id kind status amount { ${MONEY} } } }
    ... on ReversalRecorded { reversal { id status idempotencyKey amount { ${MONEY} } effect { id kind status } } }
    ... on RetractionCommitted { totals { ${TOTALS} } }
  }
}`;

export const ALL_OPERATIONS = {
  VIEWER,
  BELIEFS,
  SEARCH,
  BELIEF_NEIGHBORHOOD,
  PREVIEW_RETRACTION,
  RETRACT_BELIEF,
  RETRACTION_RECEIPT,
  RETRACTION_EVENTS,
} as const;
