import fs from 'node:fs';
import path from 'node:path';
import { openStore } from './engine';
import { pgliteTemplatePath } from './template';

/**
 * `node build/src/store/write-template.js`: migrates an in-memory PGlite store and dumps its data
 * directory where templateFor() finds it (run by the build).
 */
const file = process.argv[2] ?? pgliteTemplatePath();
const store = await openStore({ dataDir: 'memory://', maintenanceMs: 0 });
try {
  const dump = await store.pglite!.dumpDataDir('none');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
} finally {
  await store.close();
}
