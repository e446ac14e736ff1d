import type { ArgBuilder, InputFieldMap, ObjectParam } from '@pothos/core';
import type { Actor, Core } from '../core';
import { type NodeType, parseGid, parseGids } from '../kernel/ids';
import { type Context, actorOf, builder, grantRead } from './builder';

/** Declarations the type files share: each shape the schema repeats, written once. */

/**
 * An enum whose values are the union V, each with its description. Typed `Record<V, string>`, the map must
 * name every value of the row type it serves and no other, so the schema and the rows cannot drift apart.
 */
export function enumOf<V extends string>(name: string, description: string, values: Record<V, string>) {
  const described = Object.fromEntries(
    Object.entries<string>(values).map(([value, about]) => [value, { description: about }]),
  );
  return builder.enumType(name, { description, values: described as Record<V, { description: string }> });
}

/** The builder's schema types, for helpers that take Pothos field builders. */
export type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer S> ? S : never;

/** A mutation's one required `input` argument (`about` describes it), of its own input type `name`. */
export function inputArg<Fields extends InputFieldMap>(
  t: { arg: ArgBuilder<Types> },
  name: string,
  description: string,
  about: string,
  fields: (f: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => Fields,
) {
  return {
    input: t.arg({ type: builder.inputType(name, { description, fields }), required: true, description: about }),
  };
}

/** A union member tagged with its GraphQL type name. */
export const typed = <T extends object>(__typename: string, o: T) => ({ __typename, ...o });

/** A union whose resolvers tag each member with its type name (`typed`). */
export function typedUnion<Member extends ObjectParam<Types>>(name: string, description: string, types: Member[]) {
  return builder.unionType(name, {
    description,
    types,
    resolveType: (r) => (r as unknown as { __typename: string }).__typename,
  });
}

/**
 * A union member that carries one object: `field` (described by `about`) of the type `type()` returns. A thunk,
 * as a field's type is read only when the schema is built: the types import each other.
 */
export function carrier<R extends ObjectParam<Types>>(
  name: string,
  description: string,
  field: string,
  type: () => R,
  about: string,
) {
  return builder.simpleObject(name, {
    description,
    fields: (t) => ({ [field]: t.field({ type: type(), description: about }) }),
  });
}

/**
 * The resolver of a mutation whose service writes one row of `type` and answers it: the `ids` fields of its input
 * decoded from global ids of their node type (a list element by element), the service run as the caller, and the
 * row it answers readable to the rest of this request.
 */
export function writes<I extends object, R extends { id: string }>(
  type: Parameters<typeof grantRead>[1],
  service: (core: Core, actor: Actor, input: I) => Promise<R>,
  ids: { [K in keyof I]?: NodeType },
) {
  return async (_r: unknown, a: { input: I }, ctx: Context): Promise<R> => {
    const input = { ...a.input } as Record<string, unknown>;
    for (const [field, node] of Object.entries(ids) as Array<[string, NodeType]>) {
      const v = input[field];
      input[field] = Array.isArray(v)
        ? parseGids(`input.${field}`, v.map(String), node)
        : parseGid(`input.${field}`, String(v), node);
    }
    const row = await service(ctx.core, actorOf(ctx), input as I);
    grantRead(ctx, type, row.id);
    return row;
  };
}

/**
 * The options of a field that may be null: its type and what it means. Most of the schema's optional columns (a
 * timestamp set later, a retraction that reached it) are declared this way; written once, they read as one line.
 */
export const orNull = <T>(type: T, description: string) => ({ type, nullable: true as const, description });

/** The options of a field that is never null: its type and what it means (a list of nodes, say). */
export const ofType = <T>(type: T, description: string) => ({ type, description });
