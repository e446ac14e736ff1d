// Every GraphQL document the dashboard sends, checked against the server's schema and the armor
// limits the server enforces (src/server/yoga.ts LIMITS). Runs without a browser, so an API change that would break
// the page fails here even where Chromium is absent.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSchema, Lexer, parse, Source, specifiedRules, TokenKind, validate, type ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { LIMITS } from '../../src/server/yoga';
import { queryText } from '../../src/client';
import { ALL_OPERATIONS } from '../../dashboard/src/operations';

function tokens(text: string): number {
  const lexer = new Lexer(new Source(text));
  let n = 0;
  for (let t = lexer.advance(); t.kind !== TokenKind.EOF; t = lexer.advance()) n++;
  return n;
}

// The server's SDL as checked in (schema/schema.graphql, emitted from the executable schema by `npm run schema`).
// Built here rather than imported: vitest may load graphql twice (ESM
// and CJS), and a schema object cannot cross between the two.
const schema = buildSchema(fs.readFileSync(path.resolve(import.meta.dirname, '../../schema/schema.graphql'), 'utf8'));

describe('dashboard operations against the server schema', () => {
  it.each(Object.entries(ALL_OPERATIONS))('%s is valid and within the server limits', (_name, document) => {
    const text = queryText(document);
    const rules: ValidationRule[] = [
      ...specifiedRules,
      maxDepthRule({ n: LIMITS.depth, flattenFragments: true }),
      costLimitRule({ maxCost: LIMITS.cost }),
      maxAliasesRule({ n: LIMITS.aliases }),
    ];
    expect(validate(schema, parse(text), rules).map((e) => e.message)).toEqual([]);
    expect(tokens(text)).toBeLessThanOrEqual(LIMITS.tokens);
  });

  it('a document outside the schema is rejected (the check can fail)', () => {
    expect(validate(schema, parse('query { viewer { id token } }'), specifiedRules).length).toBeGreaterThan(0);
  });
});
