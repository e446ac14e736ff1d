/**
 * What every experiment report states about where it ran: engine and its versions, machine, date,
 * runtime versions, and the commit of this repository. Plus money formatting and JSON output.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineVersions, type Store } from '../../src/store/engine';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Environment {
  date: string;
  engine: { name: string; description: string; server: string; vector: string | null };
  machine: {
    os: string;
    arch: string;
    cpu: string;
    cores: number;
    memoryGiB: number;
    hostname: string;
    loadAverage: number[];
  };
  versions: Record<string, string>;
  commit: string | null;
}

function pkgVersion(name: string | null): string {
  try {
    const file =
      name === null ? path.join(repoRoot, 'package.json') : path.join(repoRoot, 'node_modules', name, 'package.json');
    return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function gitCommit(): string | null {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return dirty ? `${head} (working tree modified)` : head;
  } catch {
    return null;
  }
}

/** Describes the run: the store's engine as the server reports it, this machine, and the versions in use. */
export async function environment(store: Store, extraPackages: string[] = []): Promise<Environment> {
  const v = await engineVersions(store.db);
  const cpus = os.cpus();
  const versions: Record<string, string> = { node: process.versions.node };
  for (const p of [
    'typescript',
    'tsx',
    'kysely',
    'pg',
    '@electric-sql/pglite',
    'graphql',
    'graphql-yoga',
    'graphql-ws',
    ...extraPackages,
  ])
    versions[p] = pkgVersion(p);
  versions.retract = pkgVersion(null);
  return {
    date: new Date().toISOString(),
    engine: { name: store.engine, description: store.description, server: v.server, vector: v.vector },
    machine: {
      os: `${os.type()} ${os.release()}`,
      arch: os.arch(),
      cpu: cpus[0]?.model.trim() ?? 'unknown',
      cores: cpus.length,
      memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
      hostname: os.hostname(),
      loadAverage: os.loadavg().map((x) => Math.round(x * 100) / 100),
    },
    versions,
    commit: gitCommit(),
  };
}

/** The environment as the lines every report prints first. */
export function environmentLines(env: Environment): string[] {
  const pg =
    env.engine.name === 'pglite'
      ? `PGlite ${env.versions['@electric-sql/pglite']} (PostgreSQL ${env.engine.server})`
      : `PostgreSQL ${env.engine.server}`;
  return [
    `date:     ${env.date}`,
    `engine:   ${pg}, pgvector ${env.engine.vector ?? 'none'} — ${env.engine.description}`,
    `machine:  ${env.machine.cpu} × ${env.machine.cores}, ${env.machine.memoryGiB} GiB, ${env.machine.os} ${env.machine.arch}; load average at start ${env.machine.loadAverage.join(' ')}`,
    `versions: node ${env.versions.node}, typescript ${env.versions.typescript}, tsx ${env.versions.tsx}, kysely ${env.versions.kysely}, pg ${env.versions.pg}, graphql ${env.versions.graphql}, graphql-yoga ${env.versions['graphql-yoga']}, graphql-ws ${env.versions['graphql-ws']}`,
    `commit:   ${env.commit ?? 'unknown'}`,
  ];
}

/** Integer minor units as dollars: 124000 → "$1,240.00" (USD only; other currencies as "1,240.00 EUR"). */
export function money(amountMinor: number, currency = 'USD'): string {
  const sign = amountMinor < 0 ? '-' : '';
  const abs = Math.abs(amountMinor);
  const units = Math.floor(abs / 100).toLocaleString('en-US');
  const cents = String(abs % 100).padStart(2, '0');
  return currency === 'USD' ? `${sign}$${units}.${cents}` : `${sign}${units}.${cents} ${currency}`;
}

/** Writes `doc` as pretty JSON, creating the directory. */
export function writeJson(file: string, doc: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(doc, null, 2) + '\n');
}

/** A fixed-width text table: the first row is the header. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
