// The documents reach_eval's RETRACT arm sends, typed by the schema through the client (src/client).
import { graphql, MoneyFields, TotalsFields } from '../../src/client';

const EffectNode = graphql(
  `
    fragment EffectNode on Effect {
      id
      kind
      status
      amount {
        ...MoneyFields
      }
      idempotencyKey
    }
  `,
  [MoneyFields],
);

export const CREATE_AGENT = graphql(`
  mutation CreateAgent($input: CreateAgentInput!) {
    createAgent(input: $input) {
      token
      agent {
        id
        name
        fleet
        scopes
      }
    }
  }
`);
export const REGISTER_KIND = graphql(`
  mutation RegisterEffectKind($input: RegisterEffectKindInput!) {
    registerEffectKind(input: $input) {
      kind
    }
  }
`);
export const ASSERT = graphql(`
  mutation AssertBelief($input: AssertBeliefInput!) {
    assertBelief(input: $input) {
      __typename
      ... on BeliefAsserted {
        belief {
          id
        }
      }
      ... on BeliefCorroborated {
        belief {
          id
        }
      }
      ... on ContradictionRaised {
        contradiction {
          id
        }
      }
      ... on PremiseRetracted {
        premise {
          id
        }
      }
    }
  }
`);
export const BELIEVED = graphql(`
  query Believed($claimKey: String!) {
    beliefByClaim(claimKey: $claimKey) {
      id
      claimKey
      value
      status
    }
  }
`);
export const PROPOSE = graphql(`
  mutation ProposeEffect($input: ProposeEffectInput!) {
    proposeEffect(input: $input) {
      __typename
      ... on EffectProposed {
        effect {
          id
        }
      }
      ... on PremiseRetracted {
        premise {
          id
        }
      }
    }
  }
`);
export const CLAIM = graphql(
  `
    mutation ClaimEffect {
      claimEffect {
        ...EffectNode
      }
    }
  `,
  [EffectNode],
);
export const COMPLETE = graphql(`
  mutation CompleteEffect($input: CompleteEffectInput!) {
    completeEffect(input: $input) {
      id
      status
    }
  }
`);
export const RETRACT = graphql(`
  mutation RetractBelief($input: RetractBeliefInput!) {
    retractBelief(input: $input) {
      id
    }
  }
`);
export const OBSERVE = graphql(
  `
    query Observe {
      beliefs(first: 50) {
        totalCount
        edges {
          node {
            id
            claimKey
            value
            status
          }
        }
      }
      effects(first: 50) {
        totalCount
        edges {
          node {
            ...EffectNode
            reversal {
              status
              idempotencyKey
              amount {
                ...MoneyFields
              }
              reason
            }
          }
        }
      }
    }
  `,
  [EffectNode, MoneyFields],
);
export const RECEIPT = graphql(
  `
    query Receipt($id: ID!) {
      retraction(id: $id) {
        id
        reason
        actor {
          name
        }
        totals {
          ...TotalsFields
        }
        reversals {
          status
          idempotencyKey
          amount {
            ...MoneyFields
          }
          effect {
            id
            kind
          }
        }
        cancelledEffects {
          id
          kind
        }
      }
    }
  `,
  [TotalsFields, MoneyFields],
);
export const FEED = graphql(`
  subscription Feed($after: String) {
    retractionEvents(after: $after) {
      __typename
      cursor
      retraction {
        id
      }
      ... on BeliefRetracted {
        depth
        belief {
          id
        }
      }
      ... on EffectCancelled {
        effect {
          id
        }
      }
      ... on ReversalRecorded {
        reversal {
          id
          status
        }
      }
    }
  }
`);
