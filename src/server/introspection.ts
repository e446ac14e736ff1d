import {
  type ASTVisitor,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLInterfaceType,
  type GraphQLObjectType,
  type GraphQLSchema,
  Kind,
  type SelectionSetNode,
  type ValidationContext,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
} from 'graphql';
import { limitError } from '../errors/limit-error';

/** The `ofType` chain of graphql-js's standard introspection query (getIntrospectionQuery's typeDepth), which GraphiQL sends. */
const MAX_TYPE_DEPTH = 9;

/**
 * The depth limit as it applies under `__schema` (graphql-armor's depth check leaves `__schema` to this rule).
 * A chain of nested `ofType` fields counts as one level, up to {@link MAX_TYPE_DEPTH} of them: each returns one
 * wrapped type or null, so a chain costs a handful of objects, yet graphql-js's standard introspection query
 * (GraphiQL's, codegen tools') nests it 9 deep and was refused by a depth limit of 14, leaving GraphiQL without
 * a schema. Every other level counts, so `fields { type { fields { type …` recursion is bounded as before;
 * a longer `ofType` chain is refused.
 */
function schemaDepth(
  set: SelectionSetNode,
  fragments: Map<string, FragmentDefinitionNode>,
  chain: number,
  seen: ReadonlySet<string>,
): number {
  let deepest = 0;
  for (const s of set.selections) {
    let d = 0;
    if (s.kind === Kind.FIELD) d = fieldDepth(s, fragments, chain, seen);
    else if (s.kind === Kind.INLINE_FRAGMENT) d = schemaDepth(s.selectionSet, fragments, chain, seen);
    else {
      const f = fragments.get(s.name.value);
      // A fragment cycle is refused by validation; here it only must not recurse forever.
      if (f && !seen.has(f.name.value))
        d = schemaDepth(f.selectionSet, fragments, chain, new Set(seen).add(f.name.value));
    }
    deepest = Math.max(deepest, d);
  }
  return deepest;
}

function fieldDepth(
  f: FieldNode,
  fragments: Map<string, FragmentDefinitionNode>,
  chain: number,
  seen: ReadonlySet<string>,
): number {
  const ofType = f.name.value === 'ofType';
  if (ofType && chain + 1 > MAX_TYPE_DEPTH) return Infinity;
  const below = f.selectionSet ? schemaDepth(f.selectionSet, fragments, ofType ? chain + 1 : 0, seen) : 0;
  return (ofType ? 0 : 1) + below;
}

/** The depth limit under `__schema` (see schemaDepth) as a validation rule (src/server/plugins/use-introspection-depth.ts adds it). */
export function introspectionDepthRule(maxDepth: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map(
      context
        .getDocument()
        .definitions.filter((d) => d.kind === Kind.FRAGMENT_DEFINITION)
        .map((d) => [d.name.value, d]),
    );
    return {
      Field(node) {
        // `__schema` is a field of the query root only (no field returns Query), so it is always at level 1.
        if (node.name.value !== '__schema') return;
        if (fieldDepth(node, fragments, 0, new Set()) > maxDepth) {
          context.reportError(limitError('depth', 'the query is nested too deeply; ask for fewer levels'));
        }
      },
    };
  };
}

type IntrospectionBounds = Record<string, number>;
const boundsBySchema = new WeakMap<GraphQLSchema, IntrospectionBounds>();

/**
 * The lists of introspection (`__Schema.types`, `__Type.fields`, …) bounded by the schema itself, as the cost rule
 * counts a list at its bound: every type, the most fields (arguments, enum values, …) any one has. Counted at one
 * page each, as other unbounded lists are, graphql-js's standard introspection query (GraphiQL's) cost ≈ 726M and
 * was refused; counted so, ≈ 363k (test/server/introspection.test.ts). A list the table does not name (a scalar
 * list such as `__Directive.locations`) counts as one.
 */
export function introspectionBound(schema: GraphQLSchema, type: string, field: string): number {
  let b = boundsBySchema.get(schema);
  if (!b) {
    const types = Object.values(schema.getTypeMap());
    const most = (xs: number[]) => Math.max(1, ...xs);
    const fielded = types.filter((t) => isObjectType(t) || isInterfaceType(t)) as Array<
      GraphQLObjectType | GraphQLInterfaceType
    >;
    const args = most([
      ...fielded.flatMap((t) => Object.values(t.getFields()).map((f) => f.args.length)),
      ...schema.getDirectives().map((d) => d.args.length),
    ]);
    b = {
      '__Schema.types': types.length,
      '__Schema.directives': schema.getDirectives().length,
      '__Type.fields': most(fielded.map((t) => Object.keys(t.getFields()).length)),
      '__Type.interfaces': most(fielded.map((t) => t.getInterfaces().length)),
      '__Type.possibleTypes': most(types.filter(isAbstractType).map((t) => schema.getPossibleTypes(t).length)),
      '__Type.enumValues': most(types.filter(isEnumType).map((t) => t.getValues().length)),
      '__Type.inputFields': most(types.filter(isInputObjectType).map((t) => Object.keys(t.getFields()).length)),
      '__Field.args': args,
      '__Directive.args': args,
    };
    boundsBySchema.set(schema, b);
  }
  return b[`${type}.${field}`] ?? 1;
}
