import { fork } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

/**
 * Runs a measured operation in a fresh Node process, so the memory figure is that process's own
 * and nothing the parent did (loading data, an embedded engine's heap) is counted in it.
 *
 * A worker is a module exporting `work(input, measure)`; `measure(label, fn)` times `fn` (wall
 * clock) and samples the process's resident set every 10 ms while it runs, and also reads the
 * kernel's peak (getrusage maxrss, which sees peaks between samples, e.g. while the embedded engine
 * runs synchronous WASM and timers cannot fire). Input and output travel as JSON over IPC.
 */
export interface Measurement {
  label: string;
  ms: number;
  /** Resident set just before `fn` started. */
  rssBeforeBytes: number;
  /** Largest resident set sampled while `fn` ran (10 ms period, and at its end). */
  rssPeakSampledBytes: number;
  /** The kernel's peak resident set of the process so far (includes start-up and opening the store). */
  maxRssBytes: number;
}

export type Measure = <T>(label: string, fn: () => Promise<T>) => Promise<T>;

export interface ChildResult<O> {
  output: O;
  measurements: Measurement[];
}

const ENTRY = path.join(import.meta.dirname, 'child-entry.ts');

/**
 * Runs `work(input, measure)` from the module `workerPath` in a child process; rejects with the child's error.
 * A worker may also `process.send({ progress })` while it runs (e.g. "the timed window starts now"):
 * each such value goes to `opts.onProgress`, in order, before the result.
 */
export function inChild<I, O>(
  workerPath: string,
  input: I,
  opts: { timeoutMs?: number; onProgress?: (progress: unknown) => void } = {},
): Promise<ChildResult<O>> {
  return new Promise((resolve, reject) => {
    // RETRACT_BENCH_CHILD_NODE_ARGS: extra Node flags for the child, e.g. "--cpu-prof --cpu-prof-dir=DIR".
    const extra = (process.env.RETRACT_BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = fork(ENTRY, [], {
      execArgv: ['--import', 'tsx', ...extra],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    child.stdout!.pipe(process.stderr);
    child.stderr!.pipe(process.stderr);
    let settled = false;
    const timer = setTimeout(
      () => {
        if (settled) return;
        settled = true;
        child.kill('SIGKILL');
        reject(new Error(`worker ${path.basename(workerPath)} timed out after ${opts.timeoutMs} ms`));
      },
      opts.timeoutMs ?? 30 * 60_000,
    );
    child.on(
      'message',
      (m: { ok: true; result: ChildResult<O> } | { ok: false; error: string } | { progress: unknown }) => {
        if (settled) return;
        if ('progress' in m) return opts.onProgress?.(m.progress);
        settled = true;
        clearTimeout(timer);
        if (m.ok) resolve(m.result);
        else reject(new Error(`worker ${path.basename(workerPath)} failed: ${m.error}`));
      },
    );
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (settled) return;
      settled = true;
      reject(new Error(`worker ${path.basename(workerPath)} exited (${signal ?? code}) without a result`));
    });
    child.send({ workerPath, input });
  });
}

/** Used by child-entry.ts: the measure function and its record. */
export function measurer(): { measure: Measure; measurements: Measurement[] } {
  const measurements: Measurement[] = [];
  const measure: Measure = async (label, fn) => {
    const rssBefore = process.memoryUsage.rss();
    let peak = rssBefore;
    const timer = setInterval(() => {
      const r = process.memoryUsage.rss();
      if (r > peak) peak = r;
    }, 10);
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      const ms = performance.now() - t0;
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage.rss());
      measurements.push({
        label,
        ms,
        rssBeforeBytes: rssBefore,
        rssPeakSampledBytes: peak,
        maxRssBytes: process.resourceUsage().maxRSS * 1024,
      });
    }
  };
  return { measure, measurements };
}
