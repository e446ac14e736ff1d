#!/usr/bin/env node
// npm run contract: diffs the emitted schema (schema/schema.graphql) against the agreed API contract, kept in
// this repository as schema/contract.graphql, with GraphQL Inspector, and fails on any breaking change.
// The baseline changes only on purpose: a new agreed contract is copied over it in a commit of its own.
//   node scripts/contract-check.mjs [emitted.graphql] [contract.graphql]
import fs from 'node:fs';
import { buildSchema } from 'graphql';
import { diff } from '@graphql-inspector/core';

const [emittedPath = 'schema/schema.graphql', contractPath = 'schema/contract.graphql'] = process.argv.slice(2);
for (const p of [emittedPath, contractPath]) {
  if (!fs.existsSync(p)) {
    console.log(
      `contract check: ${p} does not exist (run from the repository root; npm run schema writes the emitted one)`,
    );
    process.exit(2);
  }
}
const changes = await diff(
  buildSchema(fs.readFileSync(contractPath, 'utf8')),
  buildSchema(fs.readFileSync(emittedPath, 'utf8')),
);
const breaking = changes.filter((c) => c.criticality.level === 'BREAKING');
for (const c of breaking) console.log(`BREAKING ${c.path ?? ''}: ${c.message}`);
console.log(
  `contract check: ${breaking.length} breaking change(s) against ${contractPath}, ${changes.length - breaking.length} additions or safe changes`,
);
process.exit(breaking.length ? 1 : 0);
