// Writes schema/schema.graphql from the code (npm run schema).
import fs from 'node:fs';
import { printedSchema } from '../src/api/schema';

fs.mkdirSync('schema', { recursive: true });
fs.writeFileSync('schema/schema.graphql', printedSchema());
console.log('wrote schema/schema.graphql');
