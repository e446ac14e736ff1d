import type { Plugin } from 'graphql-yoga';
import { limitError } from '../../errors/limit-error';
import { operationCost } from '../cost';

/**
 * Refuses an operation whose page sizes break the rule or whose cost is over the limit, over HTTP, SSE and
 * WebSocket alike, once validation has passed: before authentication (Yoga builds the context after validating)
 * and before any resolver, so a refusal costs time linear in the document whoever sends it. Validation comes
 * first so a document that is invalid, or nested past the depth limit, is told that rather than its cost;
 * its rules are linear here too (graphql-js compares each pair of fragments once, armor's depth rule counts
 * each fragment once). Thrown rather than set as the validation result: Yoga caches validation results per
 * document, and the cost depends on the variables. The limit is not echoed.
 */
export function useCostLimit(maxCost: number): Plugin {
  return {
    onValidate({ params, context }) {
      return ({ valid }) => {
        if (!valid) return;
        const variables = (context as { params?: { variables?: unknown } } | undefined)?.params?.variables;
        const cost = operationCost(
          params.schema,
          params.documentAST,
          typeof variables === 'object' && variables ? (variables as Record<string, unknown>) : {},
        );
        if (cost > maxCost)
          throw limitError('cost', 'the query is too expensive; ask for fewer fields or smaller pages');
      };
    },
  };
}
