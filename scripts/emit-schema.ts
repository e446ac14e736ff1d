// Writes schema/schema.graphql from the code, then the typed client's introspection from it
// (npm run schema), so the schema and the client's document types never disagree.
import fs from 'node:fs';
import { printedSchema } from '../src/api/schema';
import { writeClientEnv } from './client-env';

fs.mkdirSync('schema', { recursive: true });
fs.writeFileSync('schema/schema.graphql', printedSchema());
console.log('wrote schema/schema.graphql');
writeClientEnv();
