import { type DocumentNode, type FieldNode, type FragmentDefinitionNode, GraphQLError, Kind, type SelectionSetNode, type ValueNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { MAX_PAGE } from '../kernel/page';
import { limitError } from './refusals';

/** graphql-armor's cost model, kept so its documented figures still hold: an object 2, a scalar 1, ×1.5 per level. */
const OBJECT_COST = 2;
const SCALAR_COST = 1;
const DEPTH_FACTOR = 1.5;
const PAGE_ARGS = new Set(['first', 'last']);

/** The integer a page argument asks for (a literal, or a variable's value); undefined for anything else, which validation or coercion refuses. */
function pageValue(v: ValueNode, variables: Record<string, unknown>): number | undefined {
  const n = v.kind === Kind.INT ? Number(v.value) : v.kind === Kind.VARIABLE ? variables[v.name.value] : undefined;
  return typeof n === 'number' && Number.isInteger(n) ? n : undefined;
}

/** The connection rule of src/retraction (1 to MAX_PAGE) as the resolvers state it, raised before any cost is counted. */
function pageError(field: string): GraphQLError {
  return new GraphQLError(`${field}: must be an integer from 1 to ${MAX_PAGE}`, {
    extensions: { code: 'BAD_USER_INPUT', field, http: { status: 400, spec: true } },
  });
}

/**
 * The cost of an operation as graphql-armor's cost-limit counts it, with two differences: a page
 * size given by a variable counts at its value (armor counts it as 1, so `first: $n` made any
 * nesting look cheap), and fragments count as if written inline. A page argument outside 1..MAX_PAGE
 * throws the connection rule's own BAD_USER_INPUT, so `first: 100000` is told the rule, not "too expensive".
 * Exported for dashboard/scripts/check-operations.ts, which measures the dashboard's documents by it.
 */
export function operationCost(doc: DocumentNode, variables: Record<string, unknown>): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

  /** A selection set's cost; `factor` is 1 at the operation's root and 1.5 below a field. */
  const selections = (set: SelectionSetNode, factor: number, seen: Set<string>): number => {
    let sum = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) sum += factor * field(s, seen);
      else if (s.kind === Kind.INLINE_FRAGMENT) sum += selections(s.selectionSet, factor, seen);
      else {
        const name = s.name.value;
        const f = fragments.get(name);
        // A fragment cycle is refused by validation; here it only must not recurse forever.
        if (f && !seen.has(name)) sum += selections(f.selectionSet, factor, new Set(seen).add(name));
      }
    }
    return sum;
  };

  const field = (f: FieldNode, seen: Set<string>): number => {
    if (!f.selectionSet) return SCALAR_COST;
    let multiplier = 1;
    for (const a of f.arguments ?? []) {
      if (!PAGE_ARGS.has(a.name.value)) continue;
      const v = pageValue(a.value, variables);
      if (v === undefined) continue;
      if (v < 1 || v > MAX_PAGE) throw pageError(a.name.value);
      multiplier = Math.max(multiplier, v);
    }
    return (OBJECT_COST + selections(f.selectionSet, DEPTH_FACTOR, seen)) * multiplier;
  };

  let worst = 0;
  for (const d of doc.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    worst = Math.max(worst, selections(d.selectionSet, 1, new Set()));
  }
  return worst;
}

/**
 * Checks page sizes and the cost of every operation as it starts to execute or subscribe, over
 * HTTP, SSE and WebSocket alike. Not in validation: the cost depends on the variables, and
 * validation results are cached per document. The limit is not echoed.
 */
export function costLimitPlugin(maxCost: number): Plugin {
  const refusal = (document: DocumentNode, variables: unknown): GraphQLError | null => {
    try {
      const cost = operationCost(document, typeof variables === 'object' && variables ? (variables as Record<string, unknown>) : {});
      return cost > maxCost ? limitError('cost', 'the query is too expensive; ask for fewer fields or smaller pages') : null;
    } catch (e) {
      if (e instanceof GraphQLError) return e;
      throw e;
    }
  };
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const e = refusal(args.document, args.variableValues);
      if (e) setResultAndStopExecution({ errors: [e] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const e = refusal(args.document, args.variableValues);
      if (e) setResultAndStopExecution({ errors: [e] });
    },
  };
}
