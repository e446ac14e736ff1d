import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project root (where package.json lives), found by walking up from this module: the same
 * answer whether the code runs from src/ through tsx or bundled into build/.
 */
export function projectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('no package.json above the running module');
    dir = up;
  }
}

/** Where the build writes the migrated PGlite data directory (`npm run build`). */
export function pgliteTemplatePath(): string {
  return path.join(projectRoot(), 'build', 'pglite-template.tar');
}

/**
 * The migrated data directory a new embedded store starts from: the build's dump, when the data
 * directory holds no cluster yet and the build wrote one. openStore still applies any migration the
 * dump lacks, so an old dump costs time, never correctness.
 */
export function templateFor(pgdata: string): Blob | undefined {
  if (fs.existsSync(path.join(pgdata, 'PG_VERSION'))) return undefined;
  const file = pgliteTemplatePath();
  return fs.existsSync(file) ? new Blob([fs.readFileSync(file)]) : undefined;
}
