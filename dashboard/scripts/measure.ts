// One measurement of a dashboard document against the limits the server enforces (src/server/config.ts
// DEFAULT_LIMITS): depth and aliases by the graphql-armor rules the server runs with the same options, cost by
// the server's own rule (src/server/cost.ts), tokens by a count. Used by check-operations.ts and
// test/e2e/operations.test.ts, so the dashboard is checked against what the server enforces, one way.
import {
  type GraphQLSchema,
  Kind,
  Lexer,
  parse,
  Source,
  specifiedRules,
  TokenKind,
  validate,
  type ValidationRule,
} from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { DEFAULT_LIMITS } from '../../src/server/config';
import { operationCost } from '../../src/server/cost';

/**
 * The largest `first` the dashboard sends (preview-panel.ts and retract-panel.ts in dashboard/src). The cost depends on
 * variables (a page counts at its size), so every variable is measured at this: the worst case it sends.
 */
export const DASHBOARD_MAX_PAGE = 100;

export interface Measured {
  depth?: number;
  aliases?: number;
  cost?: number;
  tokens: number;
  /** Why the server would refuse it; empty when it would not. */
  errors: string[];
}

/** The lexical tokens of a document, as the server's token limit counts them. */
export function countTokens(text: string): number {
  const lexer = new Lexer(new Source(text));
  let n = 0;
  for (let t = lexer.advance(); t.kind !== TokenKind.EOF; t = lexer.advance()) n++;
  return n;
}

export function measure(schema: GraphQLSchema, text: string, limits = DEFAULT_LIMITS): Measured {
  const doc = parse(text);
  const m: Measured = { tokens: countTokens(text), errors: [] };
  const rules: ValidationRule[] = [
    ...specifiedRules,
    maxDepthRule({
      n: limits.depth,
      ignoreIntrospection: false,
      flattenFragments: true,
      onAccept: [(_c, { n }) => (m.depth = n)],
    }),
    maxAliasesRule({ n: limits.aliases, onAccept: [(_c, { n }) => (m.aliases = n)] }),
  ];
  try {
    m.errors.push(...validate(schema, doc, rules).map((e) => e.message));
  } catch (err) {
    m.errors.push((err as Error).message);
  }
  const worst = Object.fromEntries(
    doc.definitions
      .flatMap((d) => (d.kind === Kind.OPERATION_DEFINITION ? (d.variableDefinitions ?? []) : []))
      .map((v) => [v.variable.name.value, DASHBOARD_MAX_PAGE]),
  );
  try {
    m.cost = operationCost(schema, doc, worst);
    if (m.cost > limits.cost) m.errors.push(`cost ${m.cost} is above the server's limit ${limits.cost}`);
  } catch (err) {
    // The server's page rule (1..500), which its cost rule raises before counting.
    m.errors.push((err as Error).message);
  }
  if (m.tokens > limits.tokens) m.errors.push(`${m.tokens} tokens is above the server's limit ${limits.tokens}`);
  return m;
}
