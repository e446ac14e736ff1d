// Selections every client shares, as fragments, so a receipt's figures are spelled once. The server
// flattens fragments before its depth limit (src/server/yoga.ts), so they cost no extra depth.
import { graphql } from './graphql.js';

export const MoneyFields = graphql(`
  fragment MoneyFields on Money {
    amountMinor
    currency
  }
`);

export const TotalsFields = graphql(
  `
    fragment TotalsFields on RetractionTotals {
      beliefsRetracted
      effectsCancelled
      effectsReached
      reversalsOwed
      unreachable
      exposure {
        ...MoneyFields
      }
      owed {
        ...MoneyFields
      }
      unreachableAmount {
        ...MoneyFields
      }
      settled {
        ...MoneyFields
      }
    }
  `,
  [MoneyFields],
);

/** A belief as agents read it, with the name of the agent that asserted it. */
export const BeliefFields = graphql(`
  fragment BeliefFields on Belief {
    id
    claimKey
    statement
    value
    status
    evidence
    createdAt
    author {
      name
    }
  }
`);
