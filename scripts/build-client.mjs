// Compiles the typed client (every file under src/client) to ESM JavaScript with declarations in
// packages/client/dist, the files the @retract/client package ships (`npm pack ./packages/client`
// runs this first through the package's prepack). tsc, not esbuild: the declarations are the
// package's types, and tsc under NodeNext refuses a relative import without its extension, which
// Node would refuse at run time. Hand-written declarations (the schema's introspection, which
// graphql.d.ts imports) are not emitted by tsc, so they are copied beside the output.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = path.join(root, 'src/client');
const dist = path.join(root, 'packages/client/dist');

rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'packages/client')],
  { stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.d.ts'))) {
  mkdirSync(path.dirname(path.join(dist, file)), { recursive: true });
  cpSync(path.join(src, file), path.join(dist, file));
}
