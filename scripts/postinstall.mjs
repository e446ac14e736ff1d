// Builds the dashboard after `npm ci`/`npm install`, so `npm start` serves it with no extra step.
// Skipped when the dashboard sources are absent (a production install of the package alone).
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

if (existsSync('dashboard/vite.config.ts') && existsSync('node_modules/vite')) {
  const r = spawnSync('npx', ['vite', 'build', '--config', 'dashboard/vite.config.ts', '--logLevel', 'warn'], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('dashboard build failed');
    process.exit(r.status ?? 1);
  }
}
