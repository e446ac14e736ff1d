// Every GraphQL document the dashboard sends, typed by the schema through the client (src/client):
// each result type in types.ts is read off these documents, so a field the schema loses fails tsc.
//
// Deliberate choices, so the server's limits never bite:
// - no aliases; shared selections are fragments, which the server flattens before its depth limit;
// - `first` is a variable, at most 100 per page: the server's cost multiplies a page's subtree by its `first`,
//   literal or variable (src/server/cost.ts), and these pages stay far below its limit;
// - depth stays ≤ 6 as graphql-armor counts it (inline fragments count as one level), ≤ 5 as plain nesting;
// - a field of a type the viewer's scopes do not open (effects, receipts) is asked for only
//   `@include(if: $canReadEffects / $canReadReceipts)`: the server refuses such a field FORBIDDEN whatever
//   path reaches it, and one refused field would fail the whole request (the types then mark it optional).
// test/e2e/operations.test.ts and `npx tsx dashboard/scripts/check-operations.ts` validate every document (against
// schema/schema.graphql and the shared contract) and measure it with the server's limits: armor's depth and alias
// rules, the server's own cost rule at `first: 100`, tokens.
import { graphql, MoneyFields, TotalsFields } from '../../src/client';

const ReinstatementTotalsFields = graphql(
  `
    fragment ReinstatementTotalsFields on ReinstatementTotals {
      beliefsReinstated
      reversalsVoided
      reversalsInFlight
      reexecutionsOwed
      effectsRestorable
      contradictionsRaised
      voided {
        ...MoneyFields
      }
      inFlight {
        ...MoneyFields
      }
      reexecutionOwed {
        ...MoneyFields
      }
    }
  `,
  [MoneyFields],
);

const BeliefListFields = graphql(`
  fragment BeliefListFields on Belief {
    id
    claimKey
    statement
    status
    createdAt
    author {
      id
      name
    }
  }
`);

// A belief, an effect, a reversal and a page of beliefs as the graph and the receipts draw them.
const BeliefRefFields = graphql(`
  fragment BeliefRefFields on Belief {
    id
    claimKey
    statement
    status
  }
`);

const BeliefPageFields = graphql(
  `
    fragment BeliefPageFields on BeliefConnection {
      totalCount
      edges {
        node {
          ...BeliefRefFields
        }
      }
    }
  `,
  [BeliefRefFields],
);

const EffectRefFields = graphql(
  `
    fragment EffectRefFields on Effect {
      id
      kind
      status
      amount {
        ...MoneyFields
      }
    }
  `,
  [MoneyFields],
);

const ReversalRefFields = graphql(
  `
    fragment ReversalRefFields on Reversal {
      id
      status
      idempotencyKey
      amount {
        ...MoneyFields
      }
    }
  `,
  [MoneyFields],
);

/** What names a retraction wherever the page mentions one: its root's claim, its author and its reason. */
const RetractionHeadFields = graphql(`
  fragment RetractionHeadFields on Retraction {
    id
    reason
    root {
      id
      claimKey
    }
    actor {
      id
      name
    }
  }
`);

/** A retraction's receipt as every panel shows it: its head and totals (what it lists is asked for beside it). */
const ReceiptFields = graphql(
  `
    fragment ReceiptFields on Retraction {
      ...RetractionHeadFields
      createdAt
      totals {
        ...TotalsFields
      }
    }
  `,
  [RetractionHeadFields, TotalsFields],
);

export const VIEWER = graphql(`
  query Viewer {
    viewer {
      id
      name
      fleet
      scopes
    }
  }
`);

export const BELIEFS = graphql(
  `
    query Beliefs($claimKeyPrefix: String, $status: BeliefStatus, $first: Int, $after: String) {
      beliefs(claimKeyPrefix: $claimKeyPrefix, status: $status, first: $first, after: $after) {
        totalCount
        edges {
          node {
            ...BeliefListFields
          }
        }
      }
    }
  `,
  [BeliefListFields],
);

export const SEARCH = graphql(
  `
    query Search($input: SearchInput!) {
      search(input: $input) {
        snapshot
        hits {
          score
          belief {
            ...BeliefListFields
          }
        }
      }
    }
  `,
  [BeliefListFields],
);

/** One belief with one level in each direction: premises (via justifications), dependents, effects. */
export const BELIEF_NEIGHBORHOOD = graphql(
  `
    query BeliefNeighborhood($id: ID!, $dependentsFirst: Int, $canReadEffects: Boolean!, $canReadReceipts: Boolean!) {
      belief(id: $id) {
        id
        claimKey
        statement
        status
        value
        evidence
        createdAt
        retractedAt
        author {
          id
          name
        }
        retraction @include(if: $canReadReceipts) {
          id
          reason
          createdAt
        }
        justifications {
          id
          holds
          premises {
            ...BeliefRefFields
          }
        }
        dependents(first: $dependentsFirst) {
          ...BeliefPageFields
        }
        effects @include(if: $canReadEffects) {
          ...EffectRefFields
          idempotencyKey
          externalRef
          reversal @include(if: $canReadReceipts) {
            id
            status
            idempotencyKey
            providerRef
            amount {
              ...MoneyFields
            }
          }
        }
      }
    }
  `,
  [MoneyFields, BeliefRefFields, BeliefPageFields, EffectRefFields],
);

export const PREVIEW_RETRACTION = graphql(
  `
    query PreviewRetraction(
      $beliefId: ID!
      $first: Int
      $after: String
      $canReadEffects: Boolean!
      $canReadReceipts: Boolean!
    ) {
      previewRetraction(beliefId: $beliefId) {
        root {
          id
          claimKey
        }
        beliefs(first: $first, after: $after) {
          ...BeliefPageFields
          pageInfo {
            hasNextPage
            endCursor
          }
        }
        survivors {
          ...BeliefRefFields
        }
        pendingEffects @include(if: $canReadEffects) {
          ...EffectRefFields
        }
        executedEffects @include(if: $canReadEffects) {
          ...EffectRefFields
        }
        totals @include(if: $canReadReceipts) {
          ...TotalsFields
        }
      }
    }
  `,
  [BeliefRefFields, BeliefPageFields, EffectRefFields, TotalsFields],
);

// The receipt and its totals are the retractor's own answer (readable without receipts:read); what it lists is not.
export const RETRACT_BELIEF = graphql(
  `
    mutation RetractBelief(
      $input: RetractBeliefInput!
      $first: Int
      $canReadEffects: Boolean!
      $canReadReceipts: Boolean!
    ) {
      retractBelief(input: $input) {
        ...ReceiptFields
        beliefs(first: $first) {
          ...BeliefPageFields
        }
        cancelledEffects @include(if: $canReadEffects) {
          id
          status
        }
        reversals @include(if: $canReadReceipts) {
          ...ReversalRefFields
          effect {
            id
          }
        }
      }
    }
  `,
  [ReceiptFields, BeliefPageFields, ReversalRefFields],
);

export const RETRACTION_RECEIPT = graphql(
  `
    query RetractionReceipt($id: ID!) {
      retraction(id: $id) {
        ...ReceiptFields
      }
    }
  `,
  [ReceiptFields],
);

/** The live feed. `after` is the last cursor seen; null means "from now". Dispatch is on __typename. */
export const RETRACTION_EVENTS = graphql(
  `
    subscription RetractionEvents($after: String) {
      retractionEvents(after: $after) {
        __typename
        cursor
        at
        retraction {
          ...RetractionHeadFields
        }
        ... on BeliefRetracted {
          depth
          belief {
            ...BeliefRefFields
          }
        }
        ... on EffectCancelled {
          effect {
            ...EffectRefFields
          }
        }
        ... on ReversalRecorded {
          reversal {
            ...ReversalRefFields
            effect {
              id
              kind
              status
            }
          }
        }
        ... on RetractionCommitted {
          totals {
            ...TotalsFields
          }
        }
        ... on ReinstatementStarted {
          reinstatement {
            id
          }
        }
        ... on BeliefReinstated {
          depth
          reinstatement {
            id
          }
          belief {
            ...BeliefRefFields
          }
        }
        ... on ReversalVoided {
          reinstatement {
            id
          }
          reversal {
            ...ReversalRefFields
            effect {
              id
              kind
            }
          }
        }
        ... on ReinstatementCommitted {
          reinstatement {
            id
            totals {
              ...ReinstatementTotalsFields
            }
          }
        }
      }
    }
  `,
  [RetractionHeadFields, BeliefRefFields, EffectRefFields, ReversalRefFields, TotalsFields, ReinstatementTotalsFields],
);

// The reinstatement's receipt is the reinstating agent's own answer, as a retraction's is the retractor's; the money
// lines and restorable effects it lists are receipts:read.
const ReinstatementFields = graphql(
  `
    fragment ReinstatementFields on Reinstatement {
      id
      status
      reason
      createdAt
      retraction {
        id
        root {
          id
          claimKey
        }
      }
      actor {
        id
        name
      }
      totals {
        ...ReinstatementTotalsFields
      }
    }
  `,
  [ReinstatementTotalsFields],
);

/** The history panel and the money strip at sign-in: recent receipts with their totals, and the fleet's open money. */
export const HISTORY = graphql(
  `
    query History($first: Int) {
      retractions(first: $first) {
        totalCount
        edges {
          node {
            ...ReceiptFields
          }
        }
      }
      reinstatements(first: $first) {
        edges {
          node {
            ...ReinstatementFields
          }
        }
      }
      openMoney {
        owedCount
        owed {
          ...MoneyFields
        }
        inFlightCount
        inFlight {
          ...MoneyFields
        }
        reexecutionOwedCount
        reexecutionOwed {
          ...MoneyFields
        }
      }
    }
  `,
  [MoneyFields, ReceiptFields, ReinstatementFields],
);

const ReinstatementListFields = graphql(
  `
    fragment ReinstatementListFields on Reinstatement {
      beliefs(first: $first) {
        ...BeliefPageFields
      }
      moneyLines @include(if: $canReadReceipts) {
        line
        priorStatus
        reexecutionKey
        amount {
          ...MoneyFields
        }
        reversal {
          id
        }
        effect {
          id
          kind
        }
      }
      restorableEffects @include(if: $canReadReceipts) {
        id
        kind
      }
    }
  `,
  [MoneyFields, BeliefPageFields],
);

export const REINSTATE_RETRACTION = graphql(
  `
    mutation ReinstateRetraction($input: ReinstateRetractionInput!, $first: Int, $canReadReceipts: Boolean!) {
      reinstateRetraction(input: $input) {
        __typename
        ... on RetractionReinstated {
          reinstatement {
            ...ReinstatementFields
            ...ReinstatementListFields
          }
        }
        ... on ReinstatementBlocked {
          reinstatement {
            id
            status
          }
          contradiction {
            id
            claimKey
          }
        }
      }
    }
  `,
  [ReinstatementFields, ReinstatementListFields],
);

export const REINSTATEMENT_RECEIPT = graphql(
  `
    query ReinstatementReceipt($id: ID!, $first: Int, $canReadReceipts: Boolean!) {
      reinstatement(id: $id) {
        ...ReinstatementFields
        ...ReinstatementListFields
      }
    }
  `,
  [ReinstatementFields, ReinstatementListFields],
);

/** The time slider: the graph's beliefs as they stood at an instant (absent: not yet asserted then). */
export const BELIEFS_AS_OF = graphql(`
  query BeliefsAsOf($ids: [ID!], $asOf: DateTime, $first: Int) {
    beliefs(ids: $ids, asOf: $asOf, first: $first) {
      edges {
        node {
          id
          status
          createdAt
        }
      }
    }
  }
`);

export const ALL_OPERATIONS = {
  VIEWER,
  BELIEFS,
  SEARCH,
  BELIEF_NEIGHBORHOOD,
  PREVIEW_RETRACTION,
  RETRACT_BELIEF,
  RETRACTION_RECEIPT,
  RETRACTION_EVENTS,
  HISTORY,
  REINSTATE_RETRACTION,
  REINSTATEMENT_RECEIPT,
  BELIEFS_AS_OF,
} as const;
