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
  // Dependencies are bundled too: resolving and reading a few hundred package files at every start
  // cost more than PGlite's own start. What stays external loads files beside its own code (PGlite's
  // WebAssembly and extension bundles, pino's transports) or is an optional native add-on; GraphiQL's
  // 9 MB of built assets are read from node_modules on the first GraphiQL request (src/server/graphiql.ts).
  external: [
    '@graphql-yoga/render-graphiql',
    '@graphql-yoga/render-graphiql/*',
    '@electric-sql/pglite',
    '@electric-sql/pglite/*',
    '@electric-sql/pglite-pgvector',
    'pino',
    'pino-pretty',
    'thread-stream',
    'pg-native',
    'bufferutil',
    'utf-8-validate',
  ],
  // Bundled CommonJS packages call require(); ESM output has none unless given one.
  banner: {
    js: "import { createRequire as __retractRequire } from 'node:module'; const require = __retractRequire(import.meta.url);",
  },
  sourcemap: true,
  logLevel: 'warning',
});

const r = spawnSync(process.execPath, ['build/src/store/write-template.js'], { stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
