// Writes src/client/graphql-env.d.ts, the schema's introspection as a type, from the checked-in
// schema/schema.graphql (npm run codegen; npm run schema runs it too). gql.tada infers every typed
// document's result and variables from this one file, so after a merge that changed the schema,
// regenerating it is the only step: tsc then re-checks each document against the new schema.
import fs from 'node:fs';
import { buildSchema, introspectionFromSchema } from 'graphql';
import { minifyIntrospection, outputIntrospectionFile } from 'gql.tada/internal';

export const CLIENT_ENV = 'src/client/graphql-env.d.ts';

/**
 * The introspection file's text for the SDL given. The schema is named: gql.tada then writes no
 * `declare module 'gql.tada'` augmentation, which the client package would otherwise carry into every
 * project that installs it, clashing with that project's own gql.tada schema (src/client/graphql.ts
 * passes the introspection to initGraphQLTada itself and needs no augmentation).
 */
export function clientEnv(sdl: string): string {
  const introspection = { ...minifyIntrospection(introspectionFromSchema(buildSchema(sdl))), name: 'retract' };
  return outputIntrospectionFile(introspection, { fileType: '.d.ts', shouldPreprocess: true });
}

export function writeClientEnv(): void {
  fs.writeFileSync(CLIENT_ENV, clientEnv(fs.readFileSync('schema/schema.graphql', 'utf8')));
  console.log(`wrote ${CLIENT_ENV}`);
}

if (import.meta.url === `file://${process.argv[1]}`) writeClientEnv();
