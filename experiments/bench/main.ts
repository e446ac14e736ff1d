/**
 * `npm run bench -- [<name> …] [--size N] [--engine pglite|postgres] [--<flag> [value] …]`
 *
 * Runs every benchmark in experiments/bench (or only those named), one after another. For each it
 * prints the environment (engine and versions, node, package versions, machine, date, commit), the
 * benchmark's table, and ends with ONE summary line:
 *
 *   bench <name>: <figure> vs limit <figure> = <ratio> (target <target>; …other targets…) MET | MISSED (…)
 *
 * and writes `results/bench/<name>-<engine>-<date>.json` (everything measured) plus its SVG charts.
 * The exit status is 1 when a benchmark failed with an error, 3 when one missed a target (still a
 * published result: its table, record and MISSED summary are printed first), else 0.
 *
 * Engines: `--engine pglite` (default) uses fresh PGlite data directories in the OS temp dir;
 * `--engine postgres` creates fresh databases on the server named by DATABASE_URL (its host and
 * credentials; the database it names is never touched) or postgres://postgres@127.0.0.1:5432, and
 * drops them afterwards.
 *
 * Adding a benchmark: create `experiments/bench/<name>.ts` that exports
 *
 *   export const bench: Bench = { name: '<name>', description: '…', async run(opts) { …; return result } };
 *
 * with the types below (defined in ./lib/bench.ts):
 *  - `opts: BenchOptions` — `engine`, `size` (from --size; the benchmark says what its size means),
 *    `flags` (every other --flag), `serverUrl` (where to create PostgreSQL databases, see
 *    lib/stores.ts `freshDb`), `log` (progress to stderr).
 *  - `BenchResult` — `targets` (the headline target first; each with figure, limit, ratio, target,
 *    met), `table` (columns, rows, notes), `data` (the JSON record's payload), optional `charts`
 *    (SVG from lib/svg.ts `lineChart`), `phases` (ms per phase of the run itself), `caveats`,
 *    `engineVersions` (of the database measured; else main.ts asks the engine itself).
 * Helpers: lib/stores.ts (fresh databases, the owner's SQL connection), lib/child.ts (run a measured
 * call in a child process and get its wall time and peak RSS), lib/report.ts (formatting, records).
 * Nothing to register: `npm run bench` runs every top-level .ts file here (except main.ts), by file name.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { type EngineName, engineVersions, openStore } from '../../src/store/engine';
import type { Bench, BenchOptions } from './lib/bench';
import { describeEnvironment, environment, formatTable, fmtMs, summaryLine, writeRecord } from './lib/report';
import { DEFAULT_SERVER } from './lib/stores';

export type { Bench, BenchOptions, BenchResult, Target, Table, Chart, Cell } from './lib/bench';

interface Args {
  names: string[];
  engine: EngineName;
  size?: number;
  flags: Record<string, string | true>;
}

/** Parses `<name>… --size N --engine E --flag [value]`; a flag followed by another flag (or nothing) is boolean. */
export function parseArgs(argv: string[]): Args {
  const names: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') continue;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) {
        flags[a.slice(2, eq)] = a.slice(eq + 1);
        continue;
      }
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('--')) {
        flags[a.slice(2)] = next;
        i++;
      } else flags[a.slice(2)] = true;
    } else names.push(a);
  }
  const engine = (flags.engine ?? 'pglite') as string;
  if (engine !== 'pglite' && engine !== 'postgres')
    throw new Error(`--engine must be pglite or postgres (got ${String(engine)})`);
  let size: number | undefined;
  if (flags.size !== undefined) {
    const m = typeof flags.size === 'string' ? /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(flags.size) : null;
    if (!m) throw new Error('--size takes a number like 10000, 10k or 1M');
    size = Math.round(Number(m[1]) * (m[2]?.toLowerCase() === 'k' ? 1e3 : m[2]?.toLowerCase() === 'm' ? 1e6 : 1));
  }
  delete flags.engine;
  delete flags.size;
  return { names, engine, size, flags };
}

/** The benchmark files in this directory: top-level `<name>.ts` except main.ts, by name. */
export function benchFiles(dir = import.meta.dirname): Map<string, string> {
  const files = new Map<string, string>();
  for (const f of fs.readdirSync(dir).sort()) {
    if (!f.endsWith('.ts') || f === 'main.ts' || f.endsWith('.test.ts') || f.endsWith('.d.ts')) continue;
    files.set(f.slice(0, -3), path.join(dir, f));
  }
  return files;
}

/** Imports one benchmark file and returns its `bench` export; throws when it has none. */
export async function load(file: string): Promise<Bench> {
  const mod = (await import(pathToFileURL(file).href)) as { bench?: Bench };
  if (!mod.bench || typeof mod.bench.run !== 'function')
    throw new Error(`${path.basename(file)} does not export \`bench: Bench\``);
  return mod.bench;
}

async function versionsOf(engine: EngineName, serverUrl: string) {
  if (engine === 'pglite') {
    const s = await openStore({ dataDir: 'memory://' });
    try {
      return await engineVersions(s.db);
    } finally {
      await s.close();
    }
  }
  const s = await openStore({ databaseUrl: serverUrl, migrate: false, poolSize: 1 });
  try {
    return await engineVersions(s.db);
  } finally {
    await s.close();
  }
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const serverUrl = process.env.DATABASE_URL || DEFAULT_SERVER;
  const files = benchFiles();
  const unknown = args.names.filter((n) => !files.has(n));
  if (unknown.length) {
    console.error(`unknown benchmark ${unknown.join(', ')}; known: ${[...files.keys()].join(', ')}`);
    return 2;
  }
  const selected = args.names.length ? args.names : [...files.keys()];
  let failed = 0;
  let missed = 0;
  for (const name of selected) {
    let b: Bench;
    try {
      b = await load(files.get(name)!);
    } catch (e) {
      failed++;
      console.error(`bench ${name} could not be loaded: ${(e as Error)?.stack ?? String(e)}`);
      console.log(`bench ${name}: ERROR could not be loaded: ${(e as Error)?.message?.split('\n')[0] ?? String(e)}`);
      continue;
    }
    const t0 = performance.now();
    const opts: BenchOptions = {
      engine: args.engine,
      size: args.size,
      flags: args.flags,
      serverUrl,
      log: (line) => process.stderr.write(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`),
    };
    console.log(`\n=== bench ${b.name} — ${b.description}`);
    try {
      const result = await b.run(opts);
      const wall = performance.now() - t0;
      const env = environment(
        b.engine ?? args.engine,
        result.engineVersions ?? (await versionsOf(args.engine, serverUrl).catch(() => null)),
      );
      console.log(describeEnvironment(env));
      console.log('');
      console.log(formatTable(result.table));
      if (result.caveats?.length) console.log(`\n${result.caveats.map((c) => `note: ${c}`).join('\n')}`);
      if (result.phases && Object.keys(result.phases).length) {
        console.log(
          `\nrun phases: ${Object.entries(result.phases)
            .map(([k, v]) => `${k} ${fmtMs(v)}`)
            .join('; ')}; total ${fmtMs(wall)}`,
        );
      }
      for (const f of writeRecord(b.name, env, result, wall)) console.log(`wrote ${path.relative(process.cwd(), f)}`);
      for (const t of result.targets)
        console.log(
          `target ${t.met ? 'met   ' : 'MISSED'}  ${t.label}: ${t.figure} vs ${t.limit} = ${t.ratio} (target ${t.target})`,
        );
      console.log(summaryLine(b.name, result.targets));
      if (result.targets.length === 0 || result.targets.some((t) => !t.met)) missed++;
    } catch (e) {
      failed++;
      console.error(`bench ${b.name} failed: ${(e as Error)?.stack ?? String(e)}`);
      console.log(`bench ${b.name}: ERROR ${(e as Error)?.message?.split('\n')[0] ?? String(e)}`);
    }
  }
  return failed ? 1 : missed ? 3 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (code) => process.exit(code),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
