// Every GraphQL document the dashboard sends, checked against the server's schema and the limits the
// server enforces (src/server/yoga.ts LIMITS), its own cost rule included (dashboard/scripts/measure.ts).
// Runs without a browser, so an API change that would break the page fails here even where Chromium is absent.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSchema, parse, specifiedRules, validate } from 'graphql';
import { queryText } from '../../src/client';
import { ALL_OPERATIONS } from '../../dashboard/src/operations';
import { DASHBOARD_MAX_PAGE, measure } from '../../dashboard/scripts/measure';
import { LIMITS } from '../../src/server/yoga';

// The server's SDL as checked in (schema/schema.graphql, emitted from the executable schema by `npm run schema`).
// Built here rather than imported: vitest may load graphql twice (ESM
// and CJS), and a schema object cannot cross between the two.
const schema = buildSchema(fs.readFileSync(path.resolve(import.meta.dirname, '../../schema/schema.graphql'), 'utf8'));

describe('dashboard operations against the server schema', () => {
  it.each(Object.entries(ALL_OPERATIONS))('%s is valid and within the server limits', (_name, document) => {
    expect(measure(schema, queryText(document), LIMITS).errors).toEqual([]);
  });

  it("the check uses the server's cost rule: a page variable counts at the dashboard's page size, and a nested page over the limit fails", () => {
    const nested =
      'query($n: Int) { beliefs(first: $n) { edges { node { dependents(first: $n) { edges { node { id claimKey } } } } } } }';
    const m = measure(schema, nested, LIMITS);
    expect(m.cost).toBeGreaterThan(DASHBOARD_MAX_PAGE * DASHBOARD_MAX_PAGE);
    expect(measure(schema, nested, { ...LIMITS, cost: m.cost! - 1 }).errors).toEqual([
      expect.stringMatching(/^cost .* above the server's limit/),
    ]);
  });

  it('a document outside the schema is rejected (the check can fail)', () => {
    expect(validate(schema, parse('query { viewer { id token } }'), specifiedRules).length).toBeGreaterThan(0);
  });
});
