// Validates every document the dashboard sends against the shared contract, and measures each one with the
// graphql-armor rules the server uses (depth, cost, aliases) plus a token count.
//   npx tsx dashboard/scripts/check-operations.ts [--print]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildSchema, Lexer, parse, Source, specifiedRules, TokenKind, validate, type ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { queryText } from '../../src/client';
import { ALL_OPERATIONS } from '../src/operations';

const MAX_DEPTH = 8;
const contractPath = fileURLToPath(new URL('../../../shared/contract/schema.graphql', import.meta.url));
const schema = buildSchema(readFileSync(process.env.CONTRACT ?? contractPath, 'utf8'));

function countTokens(text: string): number {
  const lexer = new Lexer(new Source(text));
  let n = 0;
  for (let t = lexer.advance(); t.kind !== TokenKind.EOF; t = lexer.advance()) n++;
  return n;
}

let failed = false;
for (const [name, document] of Object.entries(ALL_OPERATIONS)) {
  const text = queryText(document);
  const doc = parse(text);
  const measured: Record<string, number> = {};
  const rules: ValidationRule[] = [
    ...specifiedRules,
    maxDepthRule({ n: MAX_DEPTH, onAccept: [(_c, { n }) => (measured.depth = n)] }),
    costLimitRule({ onAccept: [(_c, { n }) => (measured.cost = n)] }),
    maxAliasesRule({ n: 15, onAccept: [(_c, { n }) => (measured.aliases = n)] }),
  ];
  let errors: readonly { message: string }[];
  try {
    errors = validate(schema, doc, rules);
  } catch (err) {
    errors = [err as Error];
  }
  const line = `${name.padEnd(20)} depth=${measured.depth ?? '?'} cost=${measured.cost ?? '?'} aliases=${measured.aliases ?? '?'} tokens=${countTokens(text)}`;
  if (errors.length) {
    failed = true;
    console.error(`FAIL ${line}\n  ${errors.map((e) => e.message).join('\n  ')}`);
  } else {
    console.log(`ok   ${line}`);
  }
  if (process.argv.includes('--print')) console.log(`${text}\n`);
}
process.exit(failed ? 1 : 0);
