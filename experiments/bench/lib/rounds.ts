import type { BenchOptions, Cell } from './bench';
import { fmtMs } from './report';

/**
 * The flags of the benchmarks that alternate server configurations on the turns benchmark's GraphQL arm (metrics,
 * tracing): seconds per arm, clients, and how many rounds of every arm.
 */
export function roundsFlags(opts: BenchOptions): { seconds: number; clients: number; rounds: number } {
  const seconds = Number(opts.flags.seconds ?? 10);
  const clients = Number(opts.flags.clients ?? opts.size ?? 8);
  const rounds = Number(opts.flags.rounds ?? 2);
  if (!(seconds > 0) || !(clients >= 1) || !(rounds >= 1))
    throw new Error('--seconds, --clients and --rounds must be positive numbers');
  return { seconds, clients, rounds };
}

/** The columns of armCells' cells. */
export const ARM_COLUMNS = ['clients', 'commits', 'commits/s', 'p50', 'p99', 'errors'];

/** The cells every row of those benchmarks shares: clients, commits, commits/s, p50, p99, errors. */
export function armCells(r: {
  clients: number;
  commits: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
}): Cell[] {
  return [r.clients, r.commits, r.perSecond.toFixed(1), fmtMs(r.p50), fmtMs(r.p99), r.errors];
}
