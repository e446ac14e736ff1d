// The documents RetractClient sends: an agent's READ, COMMIT, effect and receipt operations.
import { graphql } from './graphql.js';
import { BeliefFields, MoneyFields, TotalsFields } from './fragments.js';

const EffectFields = graphql(
  `
    fragment EffectFields on Effect {
      id
      kind
      status
      idempotencyKey
      externalRef
      amount {
        ...MoneyFields
      }
    }
  `,
  [MoneyFields],
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

export const SEARCH = graphql(
  `
    query Search($input: SearchInput!) {
      search(input: $input) {
        snapshot
        hits {
          score
          belief {
            ...BeliefFields
          }
        }
      }
    }
  `,
  [BeliefFields],
);

export const BELIEF_BY_CLAIM = graphql(
  `
    query BeliefByClaim($claimKey: String!) {
      beliefByClaim(claimKey: $claimKey) {
        ...BeliefFields
      }
    }
  `,
  [BeliefFields],
);

// The beliefs an answer names but the caller did not write are asked for only where its scopes read them
// (scopes.ts; RetractClient sets the variables): a writer holding beliefs:write alone still gets its answer.
export const ASSERT_BELIEF = graphql(
  `
    mutation AssertBelief(
      $input: AssertBeliefInput!
      $readsBeliefs: Boolean! = true
      $readsRetracted: Boolean! = true
    ) {
      assertBelief(input: $input) {
        __typename
        ... on BeliefAsserted {
          belief {
            ...BeliefFields
          }
        }
        ... on BeliefCorroborated {
          belief {
            ...BeliefFields
          }
        }
        ... on ContradictionRaised {
          contradiction {
            id
            status
            existing @include(if: $readsBeliefs) {
              ...BeliefFields
            }
          }
        }
        ... on PremiseRetracted {
          premise @include(if: $readsRetracted) {
            ...BeliefFields
          }
        }
        ... on ClaimChangedSinceRead {
          claimKey
          current @include(if: $readsBeliefs) {
            ...BeliefFields
          }
        }
      }
    }
  `,
  [BeliefFields],
);

export const RETRACT_BELIEF = graphql(
  `
    mutation RetractBelief($input: RetractBeliefInput!) {
      retractBelief(input: $input) {
        id
        reason
        root {
          id
          claimKey
        }
        totals {
          ...TotalsFields
        }
      }
    }
  `,
  [TotalsFields],
);

export const PREVIEW_RETRACTION = graphql(
  `
    query PreviewRetraction($beliefId: ID!) {
      previewRetraction(beliefId: $beliefId) {
        totals {
          ...TotalsFields
        }
        survivors {
          id
        }
        beliefs {
          totalCount
        }
      }
    }
  `,
  [TotalsFields],
);

export const PROPOSE_EFFECT = graphql(
  `
    mutation ProposeEffect($input: ProposeEffectInput!, $readsRetracted: Boolean! = true) {
      proposeEffect(input: $input) {
        __typename
        ... on EffectProposed {
          effect {
            ...EffectFields
          }
        }
        ... on PremiseRetracted {
          premise @include(if: $readsRetracted) {
            ...BeliefFields
          }
        }
      }
    }
  `,
  [EffectFields, BeliefFields],
);

export const CLAIM_EFFECT = graphql(
  `
    mutation ClaimEffect($input: ClaimEffectInput) {
      claimEffect(input: $input) {
        ...EffectFields
      }
    }
  `,
  [EffectFields],
);

export const COMPLETE_EFFECT = graphql(
  `
    mutation CompleteEffect($input: CompleteEffectInput!) {
      completeEffect(input: $input) {
        ...EffectFields
      }
    }
  `,
  [EffectFields],
);

export const FAIL_EFFECT = graphql(
  `
    mutation FailEffect($input: FailEffectInput!) {
      failEffect(input: $input) {
        ...EffectFields
      }
    }
  `,
  [EffectFields],
);

export const CONFIRM_REVERSAL = graphql(
  `
    mutation ConfirmReversal($input: ConfirmReversalInput!) {
      confirmReversal(input: $input) {
        id
        status
        idempotencyKey
        providerRef
        amount {
          ...MoneyFields
        }
      }
    }
  `,
  [MoneyFields],
);

export const RETRACTION_EVENTS = graphql(
  `
    subscription RetractionEvents($after: String, $granularity: RetractionEventGranularity) {
      retractionEvents(after: $after, granularity: $granularity) {
        __typename
        cursor
        at
        retraction {
          id
        }
        ... on BeliefRetracted {
          depth
          belief {
            id
            claimKey
          }
        }
        ... on EffectCancelled {
          effect {
            id
            status
          }
        }
        ... on ReversalRecorded {
          reversal {
            id
            status
          }
        }
        ... on BeliefsRetracted {
          depth
          count
          beliefs {
            id
            claimKey
          }
        }
        ... on EffectsCancelled {
          count
          effects {
            id
            status
          }
        }
        ... on ReversalsRecorded {
          count
          reversals {
            id
            status
          }
        }
        ... on RetractionCommitted {
          totals {
            ...TotalsFields
          }
        }
      }
    }
  `,
  [TotalsFields],
);

// The LangGraph store (langgraph/retract-store.ts) lists the ACTIVE beliefs of a claim-key prefix page by page:
// with their values to search them, by claim key alone to list namespaces.
export const BELIEFS = graphql(
  `
    query Beliefs($claimKeyPrefix: String, $status: BeliefStatus, $first: Int, $after: String) {
      beliefs(claimKeyPrefix: $claimKeyPrefix, status: $status, first: $first, after: $after) {
        edges {
          node {
            ...BeliefFields
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  `,
  [BeliefFields],
);

export const BELIEF_KEYS = graphql(`
  query BeliefKeys($claimKeyPrefix: String, $status: BeliefStatus, $first: Int, $after: String) {
    beliefs(claimKeyPrefix: $claimKeyPrefix, status: $status, first: $first, after: $after) {
      edges {
        node {
          claimKey
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

// An agent's own verdict: the LangGraph store's put of a new value accepts its own proposal, which retracts the
// old value's belief (with its cascade) and writes the new one in one transaction.
export const RESOLVE_CONTRADICTION = graphql(
  `
    mutation ResolveContradiction($input: ResolveContradictionInput!) {
      resolveContradiction(input: $input) {
        id
        status
        verdict
        accepted {
          ...BeliefFields
        }
      }
    }
  `,
  [BeliefFields],
);
