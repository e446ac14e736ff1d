// The documents the demo sends, typed by the schema through the client (src/client): the story reads
// each answer's fields as the schema types them, with no result type written by hand.
import { BeliefFields, graphql, MoneyFields, TotalsFields } from '../client';

export const CREATE_AGENT = graphql(`
  mutation CreateAgent($input: CreateAgentInput!) {
    createAgent(input: $input) {
      agent {
        id
        name
      }
      token
    }
  }
`);

export const REGISTER_EFFECT_KIND = graphql(`
  mutation RegisterEffectKind($input: RegisterEffectKindInput!) {
    registerEffectKind(input: $input) {
      kind
    }
  }
`);

export const PROPOSE = graphql(`
  mutation Propose($input: ProposeEffectInput!) {
    proposeEffect(input: $input) {
      __typename
      ... on EffectProposed {
        effect {
          id
          status
        }
      }
    }
  }
`);

export const CLAIM = graphql(
  `
    mutation Claim($input: ClaimEffectInput) {
      claimEffect(input: $input) {
        id
        kind
        amount {
          ...MoneyFields
        }
      }
    }
  `,
  [MoneyFields],
);

export const COMPLETE = graphql(`
  mutation Complete($input: CompleteEffectInput!) {
    completeEffect(input: $input) {
      status
      externalRef
    }
  }
`);

export const PREVIEW = graphql(
  `
    query Preview($id: ID!) {
      previewRetraction(beliefId: $id) {
        beliefs {
          totalCount
        }
        survivors {
          id
        }
        pendingEffects {
          id
        }
        executedEffects {
          id
        }
        totals {
          ...TotalsFields
        }
      }
    }
  `,
  [TotalsFields],
);

export const ADJUDICATE = graphql(
  `
    mutation Adjudicate($id: ID!) {
      adjudicateContradiction(contradictionId: $id) {
        verdict
        rationale
        adjudicator
        resolution {
          id
        }
        accepted {
          ...BeliefFields
        }
      }
    }
  `,
  [BeliefFields],
);

export const RECEIPT = graphql(
  `
    query Receipt($id: ID!) {
      retraction(id: $id) {
        reason
        actor {
          name
        }
        root {
          ...BeliefFields
        }
        reversals {
          status
          effect {
            kind
          }
        }
        totals {
          ...TotalsFields
        }
      }
    }
  `,
  [BeliefFields, TotalsFields],
);

export const FEED = graphql(
  `
    subscription Feed($after: String) {
      retractionEvents(after: $after) {
        __typename
        cursor
        retraction {
          id
          reason
        }
        ... on BeliefRetracted {
          depth
          belief {
            ...BeliefFields
          }
        }
        ... on EffectCancelled {
          effect {
            kind
            amount {
              ...MoneyFields
            }
            proposedBy {
              name
            }
          }
        }
        ... on ReversalRecorded {
          reversal {
            status
            idempotencyKey
            reason
            amount {
              ...MoneyFields
            }
            effect {
              kind
            }
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
  [BeliefFields, MoneyFields, TotalsFields],
);
