import type { GraphQLField, GraphQLNamedType, GraphQLOutputType } from 'graphql';
import { schema } from '../../src/api/schema';

/**
 * A mutation's selection, generated from the schema, so a field added to a result type is selected without anyone
 * touching the test: every scalar field of the result object, and every object or union field one level down as
 * `{ __typename ... on X { id } }` (a type without an id: its first scalar). A union result selects every member; a
 * member's object fields (the object it carries: the effect proposed, the contradiction raised) are expanded like a
 * result object, since they are what the call answers with.
 *
 * Duck-typed (getFields, getTypes, ofType) rather than graphql's predicates: a test runner can load a second copy of
 * graphql-js (see src/server/yoga.ts), across which instanceof fails.
 */
type Named = GraphQLNamedType & {
  getFields?: () => Record<string, GraphQLField<unknown, unknown>>;
  getTypes?: () => Named[];
};

function named(t: GraphQLOutputType): Named {
  let x = t as unknown as { ofType?: unknown };
  while (x.ofType) x = x.ofType as { ofType?: unknown };
  return x as unknown as Named;
}

/** A field that can be selected without arguments (none required). */
const selectable = (f: GraphQLField<unknown, unknown>) => f.args.every((a) => !String(a.type).endsWith('!'));
const isLeaf = (t: Named) => !t.getFields && !t.getTypes;

/** `... on X { id }`, or X's first scalar when it has no id. */
function stub(t: Named): string {
  const fields = Object.values(t.getFields!()).filter(selectable);
  const leaf = fields.find((f) => f.name === 'id') ?? fields.find((f) => isLeaf(named(f.type)));
  return leaf ? `... on ${t.name} { ${leaf.name} }` : '';
}

/** Which fields to select, by their path below the mutation (field names; union members and list indices left out). */
export type Include = (path: readonly string[]) => boolean;

/** One level down: `{ __typename ... on X { id } }`, every member for a union. */
function oneLevel(t: Named): string {
  const members = t.getTypes ? t.getTypes() : [t];
  return `{ __typename ${members.map(stub).join(' ')} }`;
}

/** The scalar fields of `t` and its object and union fields one level down (expanded when `expand`), those `include` keeps. */
function body(t: Named, expand: boolean, at: readonly string[], include: Include): string {
  return Object.values(t.getFields!())
    .filter(selectable)
    .filter((f) => include([...at, f.name]))
    .map((f) => {
      const ft = named(f.type);
      if (isLeaf(ft)) return f.name;
      return `${f.name} ${expand && ft.getFields ? `{ __typename ${body(ft, false, [...at, f.name], include)} }` : oneLevel(ft)}`;
    })
    .join(' ');
}

/** The selection set for mutation `field`'s result: every field, or those `include` keeps. */
export function resultSelection(field: string, include: Include = () => true): string {
  const t = named(schema.getMutationType()!.getFields()[field]!.type);
  if (!t.getTypes) return `{ __typename ${body(t, false, [], include)} }`;
  const members = t
    .getTypes()
    .map((m) => [m.name, body(m, true, [], include)] as const)
    .filter(([, b]) => b);
  return `{ __typename ${members.map(([m, b]) => `... on ${m} { ${b} }`).join(' ')} }`;
}

export function mutationFields(): string[] {
  return Object.keys(schema.getMutationType()!.getFields());
}
