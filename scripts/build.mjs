// Compiles the server, the CLI and the workers to JavaScript in build/ (npm ci runs it through
// postinstall), so `npm start` and the `retract` bin start without compiling TypeScript at run
// time; then writes the migrated PGlite data directory a fresh embedded store starts from
// (src/store/template.ts).
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

rmSync('build', { recursive: true, force: true });
await build({
  entryPoints: [
    'src/server/main.ts',
    'src/cli/main.ts',
    'src/mcp/main.ts',
    'src/worker/executor-main.ts',
    'src/worker/dispatcher-main.ts',
    'src/store/write-template.ts',
  ],
  outbase: '.',
  outdir: 'build',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
});

const r = spawnSync(process.execPath, ['build/src/store/write-template.js'], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
