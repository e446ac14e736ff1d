import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLNamedType,
  type GraphQLSchema,
  Kind,
  type SelectionSetNode,
  type ValueNode,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
} from 'graphql';
import { listBound } from '../api/list-bounds';
import { introspectionBound } from './introspection';
import { MAX_PAGE } from '../kernel/page';

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
 * The cost of an operation as graphql-armor's cost-limit counts it, with three differences: a page size given by
 * a variable counts at its value (armor counts it as 1, so `first: $n` made any nesting look cheap); a list
 * without `first` counts at its bound (src/api/list-bounds.ts), so nested relation lists multiply as pages do;
 * and each fragment is counted once, however often it is spread: a fragment's cost is the same wherever it
 * appears (a spread multiplies it by the factor of the place it is spread), so `...F` twice in each of 25
 * nested fragments costs 25 fragment counts, not 2^25 expansions. The work is linear in the document's
 * length, and it needs neither validation nor authentication first: an unknown field or fragment counts as
 * nothing here (validation refuses it afterwards) and a fragment cycle counts its way round once.
 * A page argument outside 1..MAX_PAGE throws the connection rule's own BAD_USER_INPUT, so `first: 100000`
 * is told the rule, not "too expensive".
 * Exported for dashboard/scripts/measure.ts, which measures the dashboard's documents by it.
 */
export function operationCost(schema: GraphQLSchema, doc: DocumentNode, variables: Record<string, unknown>): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of doc.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const counted = new Map<string, number>();

  /** A fragment's cost at factor 1, counted on its first spread; a spread inside its own expansion (a cycle) counts 0. */
  const fragment = (name: string): number => {
    const known = counted.get(name);
    if (known !== undefined) return known;
    const f = fragments.get(name);
    if (!f) return 0;
    counted.set(name, 0);
    const cost = selections(f.selectionSet, schema.getType(f.typeCondition.name.value));
    counted.set(name, cost);
    return cost;
  };

  /** A selection set's cost at factor 1 (1 at the operation's root; a field's sub-selection counts ×1.5). */
  const selections = (set: SelectionSetNode, parent: GraphQLNamedType | undefined): number => {
    let sum = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) sum += field(s, parent);
      else if (s.kind === Kind.INLINE_FRAGMENT)
        sum += selections(s.selectionSet, s.typeCondition ? schema.getType(s.typeCondition.name.value) : parent);
      else sum += fragment(s.name.value);
    }
    return sum;
  };

  const field = (f: FieldNode, parent: GraphQLNamedType | undefined): number => {
    if (!f.selectionSet) return SCALAR_COST;
    const def =
      parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[f.name.value] : undefined;
    let multiplier = 1;
    let paged = false;
    for (const a of f.arguments ?? []) {
      if (!PAGE_ARGS.has(a.name.value)) continue;
      const v = pageValue(a.value, variables);
      if (v === undefined) continue;
      if (v < 1 || v > MAX_PAGE) throw pageError(a.name.value);
      multiplier = Math.max(multiplier, v);
      paged = true;
    }
    if (!paged && def && isListType(getNullableType(def.type))) {
      // Introspection's lists are as long as the schema makes them (src/server/introspection.ts).
      multiplier = parent!.name.startsWith('__')
        ? introspectionBound(schema, parent!.name, f.name.value)
        : listBound(parent!.name, f.name.value);
    }
    return (
      (OBJECT_COST + DEPTH_FACTOR * selections(f.selectionSet, def ? getNamedType(def.type) : undefined)) * multiplier
    );
  };

  let worst = 0;
  for (const d of doc.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    worst = Math.max(worst, selections(d.selectionSet, schema.getRootType(d.operation) ?? undefined));
  }
  return worst;
}
