import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type { BenchResult, Cell, Table, Target } from './bench';

/** Where every run's JSON and SVG go (git-ignored). */
export const RESULTS_DIR = path.resolve(import.meta.dirname, '../../../results/bench');

/** Packages whose versions a benchmark record names. */
const PACKAGES = [
  '@electric-sql/pglite',
  '@electric-sql/pglite-pgvector',
  'pg',
  'kysely',
  'pgvector',
  'tsx',
  'typescript',
];

export interface Environment {
  date: string;
  engine: string;
  engineVersions: { server: string; vector: string | null } | null;
  node: string;
  packages: Record<string, string>;
  machine: {
    cpus: number;
    cpuModel: string;
    memTotalMB: number;
    platform: string;
    release: string;
    arch: string;
    loadavg: number[];
  };
  git: { commit: string | null; dirty: boolean | null };
  command: string;
}

/** The facts every record carries: engine and its versions, node, package versions, machine, date, commit. */
export function environment(engine: string, engineVersions: Environment['engineVersions']): Environment {
  const packages: Record<string, string> = {};
  for (const p of PACKAGES) packages[p] = packageVersion(p);
  const cpus = os.cpus();
  let commit: string | null = null;
  let dirty: boolean | null = null;
  try {
    commit = execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    dirty =
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim() !== '';
  } catch {
    /* not a git checkout */
  }
  return {
    date: new Date().toISOString(),
    engine,
    engineVersions,
    node: process.version,
    packages,
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model ?? 'unknown',
      memTotalMB: Math.round(os.totalmem() / 2 ** 20),
      platform: os.platform(),
      release: os.release(),
      arch: os.arch(),
      loadavg: os.loadavg().map((x) => +x.toFixed(2)),
    },
    git: { commit, dirty },
    command: process.argv.slice(2).join(' '),
  };
}

export function describeEnvironment(env: Environment): string {
  const v = env.engineVersions;
  return [
    `engine ${env.engine}${v ? ` (server ${v.server}, pgvector ${v.vector ?? 'none'})` : ''}`,
    `node ${env.node}; ${Object.entries(env.packages)
      .map(([k, x]) => `${k} ${x}`)
      .join(', ')}`,
    `machine ${env.machine.cpus}× ${env.machine.cpuModel}, ${env.machine.memTotalMB} MB, ${env.machine.platform} ${env.machine.release}; load average ${env.machine.loadavg.join(' ')}`,
    `date ${env.date}; commit ${env.git.commit?.slice(0, 12) ?? 'unknown'}${env.git.dirty ? ' (working tree modified)' : ''}`,
  ].join('\n');
}

/** The installed version of a package, read from its package.json (exports maps hide it from require). */
function packageVersion(name: string): string {
  const require = createRequire(import.meta.url);
  for (const dir of require.resolve.paths(name) ?? []) {
    const f = path.join(dir, name, 'package.json');
    if (fs.existsSync(f)) return (JSON.parse(fs.readFileSync(f, 'utf8')) as { version: string }).version;
  }
  return 'not installed';
}

const cellText = (c: Cell) => (c === null ? '–' : String(c));

/** A fixed-width text table: numbers right-aligned, text left-aligned. */
export function formatTable(t: Table): string {
  const widths = t.columns.map((c, i) => Math.max(c.length, ...t.rows.map((r) => cellText(r[i] ?? null).length)));
  const line = (cells: Cell[], header = false) =>
    cells
      .map((c, i) => {
        const s = cellText(c);
        const w = widths[i]!;
        return !header && (typeof c === 'number' || /^[\d.,+−-]+\s?(ms|s|MB|×|%)?$/.test(s))
          ? s.padStart(w)
          : s.padEnd(w);
      })
      .join('  ')
      .trimEnd();
  const out = [line(t.columns, true), widths.map((w) => '-'.repeat(w)).join('  '), ...t.rows.map((r) => line(r))];
  for (const n of t.notes ?? []) out.push(`  ${n}`);
  return out.join('\n');
}

/**
 * The one summary line: `bench <name>: <figure> vs limit <figure> = <ratio> (target <target>) MET`,
 * from the headline target; the other targets follow inside the parentheses, and the line says MET
 * only when every target is met (MISSED names the ones missed).
 */
export function summaryLine(name: string, targets: Target[]): string {
  const [head, ...rest] = targets;
  if (!head) return `bench ${name}: no target evaluated MISSED`;
  const others = rest.map(
    (t) => `${t.label}: ${t.figure} vs ${t.limit} = ${t.ratio}, target ${t.target} ${t.met ? 'met' : 'MISSED'}`,
  );
  const missed = targets.filter((t) => !t.met);
  const verdict = missed.length === 0 ? 'MET' : `MISSED (${missed.map((t) => t.label).join('; ')})`;
  return `bench ${name}: ${head.figure} vs limit ${head.limit} = ${head.ratio} (target ${head.target}${head.label ? `: ${head.label}` : ''}${others.length ? `; ${others.join('; ')}` : ''}) ${verdict}`;
}

/** Writes `<name>-<engine>-<stamp>.json` (and the charts as SVG) under results/bench; returns the paths. */
export function writeRecord(name: string, env: Environment, result: BenchResult, wallMs: number): string[] {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = env.date.replace(/[:.]/g, '-');
  const base = `${name}-${env.engine}-${stamp}`;
  const files: string[] = [];
  const json = path.join(RESULTS_DIR, `${base}.json`);
  fs.writeFileSync(
    json,
    JSON.stringify(
      {
        bench: name,
        environment: env,
        wallMs: Math.round(wallMs),
        summary: summaryLine(name, result.targets),
        targets: result.targets,
        table: result.table,
        phases: result.phases ?? {},
        caveats: result.caveats ?? [],
        data: result.data,
      },
      null,
      2,
    ),
  );
  files.push(json);
  for (const c of result.charts ?? []) {
    const f = path.join(RESULTS_DIR, `${c.name}-${stamp}.svg`);
    fs.writeFileSync(f, c.svg);
    files.push(f);
  }
  return files;
}

/** Milliseconds as "812 ms" below 10 s, else "12.3 s". */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 10_000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

export function fmtMB(bytes: number): string {
  return `${Math.round(bytes / 2 ** 20)} MB`;
}

export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return '–';
  return `${r < 10 ? r.toFixed(2) : r.toFixed(1)}×`;
}

export function fmtCount(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1000 && n % 1000 === 0) return `${n / 1000}k`;
  return String(n);
}

/** A timer of a benchmark's own phases: `time(label, fn)` adds fn's wall time (ms) to `phases[label]`. */
export function phaseTimer(phases: Record<string, number>) {
  return async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      phases[label] = Math.round((phases[label] ?? 0) + performance.now() - t0);
    }
  };
}
