import type { ArgBuilder, InputFieldMap } from '@pothos/core';
import { builder } from './builder';

/**
 * Declarations the type files share. Each keeps the SDL it replaces: the descriptions are the schema's,
 * and the type (or argument) is the one a hand-written declaration would make.
 */

/**
 * An enum whose values are the union V, each with its description. Typed `Record<V, string>`, the map must
 * name every value of the row type it serves and no other, so the schema and the rows cannot drift apart.
 */
export function enumOf<V extends string>(name: string, description: string, values: Record<V, string>) {
  const described = Object.fromEntries(Object.entries<string>(values).map(([value, about]) => [value, { description: about }]));
  return builder.enumType(name, { description, values: described as Record<V, { description: string }> });
}

export type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer S> ? S : never;

/** A mutation's one required `input` argument (`about` describes it), of its own input type `name`. */
export function inputArg<Fields extends InputFieldMap>(
  t: { arg: ArgBuilder<Types> },
  name: string,
  description: string,
  about: string,
  fields: (f: PothosSchemaTypes.InputFieldBuilder<Types, 'InputObject'>) => Fields,
) {
  return { input: t.arg({ type: builder.inputType(name, { description, fields }), required: true, description: about }) };
}
