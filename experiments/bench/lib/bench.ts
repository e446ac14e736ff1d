import type { EngineName } from '../../../src/store/engine';

/**
 * The contract between `npm run bench` (experiments/bench/main.ts) and one benchmark.
 *
 * A benchmark is a file `experiments/bench/<name>.ts` that exports `bench: Bench`. main.ts finds it
 * by file name (no registry to edit), calls `run` once with the options parsed from the command line,
 * prints `result.table`, writes the JSON record and the charts under `results/bench/`, and prints the
 * one summary line built from `result.summary`. A benchmark throws only on errors (a wrong result, a
 * failed query); a missed target is a result (`summary.met = false`), published, not fatal.
 */
export interface Bench {
  /** Short name, the file name without `.ts`; what `npm run bench -- <name>` selects. */
  readonly name: string;
  /** One sentence: what is measured and against what. */
  readonly description: string;
  /** The engine it always measures, whatever --engine says (the Citus benchmark); its records are named for it. */
  readonly engine?: EngineName;
  run(opts: BenchOptions): Promise<BenchResult>;
}

export interface BenchOptions {
  engine: EngineName;
  /** `--size N`: run only this size (each benchmark says what its size means); undefined = its default set. */
  size?: number;
  /** Every `--flag value` / `--flag` from the command line, for benchmark-specific options. */
  flags: Readonly<Record<string, string | true>>;
  /** PostgreSQL server to create fresh benchmark databases on (DATABASE_URL or the local default). */
  serverUrl: string;
  /** Progress lines (stderr), so stdout stays the table and the summary. */
  log(line: string): void;
}

/** A cell of the printed table. null prints as "–". */
export type Cell = string | number | null;

export interface Table {
  columns: string[];
  rows: Cell[][];
  /** Notes printed under the table. */
  notes?: string[];
}

/** One target checked by a benchmark, e.g. "retractBelief at 100k within 2× of the bare-SQL limit". */
export interface Target {
  /** What is compared, human-readable. */
  label: string;
  /** The measured figure and the figure it is compared with, already formatted ("3.21 s"). */
  figure: string;
  limit: string;
  /** figure / limit (or the difference the target is stated in), formatted ("1.42×"). */
  ratio: string;
  /** The target as stated ("≤ 2×"). */
  target: string;
  met: boolean;
}

export interface Chart {
  /** File name without extension, e.g. "cascade-postgres-time". */
  name: string;
  svg: string;
}

export interface BenchResult {
  /** The headline target first; the summary line is built from it and says MET only when every target is met. */
  targets: Target[];
  table: Table;
  /** Everything measured, machine-readable; written to the JSON record under `data`. */
  data: unknown;
  charts?: Chart[];
  /** Timings of the benchmark's own phases (loading data, building indexes …), in ms. */
  phases?: Record<string, number>;
  /** Server and pgvector versions of the database the benchmark measured (src/store/engine.ts engineVersions). */
  engineVersions?: { server: string; vector: string | null } | null;
  /** What the run cannot claim, or settings that differ from the defaults. */
  caveats?: string[];
}
