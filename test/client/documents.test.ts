// The typed client's two guards that tsc cannot give: the introspection it types documents with is the
// checked-in schema's (not a stale one), and every document a client sends passes the server's full
// validation (unknown arguments, wrong argument types) against that schema.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSchema, parse, specifiedRules, validate } from 'graphql';
import { clientEnv, CLIENT_ENV } from '../../scripts/client-env';
import { queryText, type AnyDocument } from '../../src/client';
import * as client from '../../src/client/operations';
import * as demo from '../../src/cli/demo-operations';
import * as dashboard from '../../dashboard/src/operations';
import * as reach from '../../experiments/lib/reach-operations';
import { RETRACTION_EVENTS } from '../support/api-client';

const ROOT = path.resolve(import.meta.dirname, '../..');
const sdl = fs.readFileSync(path.join(ROOT, 'schema/schema.graphql'), 'utf8');
// Built here from the SDL: vitest may load graphql twice (ESM and CJS), and a schema cannot cross.
const schema = buildSchema(sdl);

const documents = (from: string, mod: Record<string, unknown>) =>
  Object.entries(mod)
    .filter(([name]) => name !== 'ALL_OPERATIONS')
    .map(([name, doc]) => [`${from} ${name}`, doc as AnyDocument] as const);

describe('the typed client against schema/schema.graphql', () => {
  it(`${CLIENT_ENV} is the checked-in schema's introspection (npm run codegen rewrites it)`, () => {
    expect(fs.readFileSync(path.join(ROOT, CLIENT_ENV), 'utf8')).toBe(clientEnv(sdl));
  });

  it.each([
    ...documents('client', client),
    ...documents('demo', demo),
    ...documents('dashboard', dashboard),
    ...documents('reach_eval', reach),
    ['test support RETRACTION_EVENTS', RETRACTION_EVENTS as AnyDocument] as const,
  ])('%s is valid', (_name, doc) => {
    expect(validate(schema, parse(queryText(doc)), specifiedRules).map((e) => e.message)).toEqual([]);
  });

  it('a document outside the schema is refused (the check can fail)', () => {
    expect(validate(schema, parse('query { viewer { id token } }'), specifiedRules).length).toBeGreaterThan(0);
  });
});
