// After `npm ci`/`npm install`: compiles the server, CLI and workers to build/ and builds the
// dashboard, so `npm start` and `retract` run JavaScript and serve the dashboard with no extra step.
// Skipped when the sources are absent (a production install of the package alone).
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

if (existsSync('scripts/build.mjs') && existsSync('node_modules/esbuild') && existsSync('node_modules/vite')) {
  const r = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('build failed');
    process.exit(r.status ?? 1);
  }
}
