// Typed GraphQL documents for every client of the API (agents, the demo, the dashboard, experiments,
// tests): `graphql()` parses a document at run time and, at type-check time, infers its result and
// variables from the schema's introspection (graphql-env.d.ts, written from schema/schema.graphql by
// `npm run codegen`). No hand-written result type can drift from the schema this way.
import { initGraphQLTada, type ResultOf, type TadaDocumentNode, type VariablesOf } from 'gql.tada';
import type { introspection } from './graphql-env.js';

/** What the JSON scalar carries (a belief's value, an effect's payload). */
export type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

export const graphql = initGraphQLTada<{
  introspection: introspection;
  // Fragments here share selections between documents, not ownership between components.
  disableMasking: true;
  scalars: { DateTime: string; JSON: Json; SafeInt: number };
}>();

export type { ResultOf, VariablesOf };

/**
 * gql.tada types a field the schema lacks (or a scalar it has no mapping for) as `unknown` rather
 * than failing; transports take documents through `Checked`, so such a document fails `tsc --noEmit`
 * instead of reaching the server.
 */
type HasUnknown<T> = unknown extends T ? true : [T] extends [Json] ? ([Json] extends [T] ? false : Walk<T>) : Walk<T>;
type Walk<T> = T extends readonly (infer E)[]
  ? HasUnknown<E>
  : T extends object
    ? true extends { [K in keyof T]-?: HasUnknown<T[K]> }[keyof T]
      ? true
      : false
    : false;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDocument = TadaDocumentNode<any, any>;
export type Checked<D extends AnyDocument> =
  HasUnknown<ResultOf<D>> extends true
    ? {
        'the document selects a field or scalar the schema does not type: run npm run codegen, then fix the document': never;
      }
    : HasUnknown<VariablesOf<D>> extends true
      ? { 'the document declares a variable of a type the schema lacks': never }
      : unknown;
