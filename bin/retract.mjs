#!/usr/bin/env node
// The `retract` command: the CLI compiled to build/ by `npm run build` (npm ci runs it).
import { existsSync } from 'node:fs';

const main = new URL('../build/src/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('retract: build/ is missing; run `npm run build` (npm ci runs it)\n');
  process.exit(2);
}
await import(main.href);
