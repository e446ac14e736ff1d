// Validates every document the dashboard sends against the API contract (schema/contract.graphql), and measures each one with the
// limits the server enforces, its own cost rule included (measure.ts).
//   npx tsx dashboard/scripts/check-operations.ts [--print]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildSchema } from 'graphql';
import { DEFAULT_LIMITS } from '../../src/server/config';
import { queryText } from '../../src/client';
import { ALL_OPERATIONS } from '../src/operations';
import { measure } from './measure';

const contractPath = fileURLToPath(new URL('../../schema/contract.graphql', import.meta.url));
const schema = buildSchema(readFileSync(process.env.CONTRACT ?? contractPath, 'utf8'));
// Documents of the panels that read this server's additions to the contract (asOf, beliefs(ids:), openMoney): checked
// against the emitted schema, which contains the contract (npm run contract), and named as such.
const emitted = buildSchema(
  readFileSync(fileURLToPath(new URL('../../schema/schema.graphql', import.meta.url)), 'utf8'),
);
const BEYOND_CONTRACT = new Set(['HISTORY', 'BELIEFS_AS_OF']);

let failed = false;
for (const [name, document] of Object.entries(ALL_OPERATIONS)) {
  const text = queryText(document);
  const beyond = BEYOND_CONTRACT.has(name);
  const m = measure(beyond ? emitted : schema, text);
  const line = `${name.padEnd(20)}${beyond ? ' (additions: schema/schema.graphql)' : ''} depth=${m.depth ?? '?'} cost=${m.cost ?? '?'}/${DEFAULT_LIMITS.cost} aliases=${m.aliases ?? '?'} tokens=${m.tokens}`;
  if (m.errors.length) {
    failed = true;
    console.error(`FAIL ${line}\n  ${m.errors.join('\n  ')}`);
  } else {
    console.log(`ok   ${line}`);
  }
  if (process.argv.includes('--print')) console.log(`${text}\n`);
}
process.exit(failed ? 1 : 0);
