import fs from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector/promises';

/**
 * A V8 CPU profile of this process over one measured window (`--cpu-profile DIR` of the turns, cascade and
 * fan-out benches), so a profile holds the server's work in that window and nothing of start-up, loading or
 * the other arms (`node --cpu-prof` profiles the whole process, module loading included). Read a profile with
 * `npx tsx experiments/cpu_profile_summary.ts DIR`. Sampling every 1 ms costs the profiled process a few per
 * cent; the CPU-per-operation figures of a profiled run are a little higher than an unprofiled run's.
 */
export interface Profiler {
  /** Starts sampling (a no-op when no directory was asked for). */
  start(): Promise<void>;
  /** Stops sampling and writes `<dir>/<name>.cpuprofile`; returns the file, or null when not profiling. */
  stop(name: string): Promise<string | null>;
}

export function profiler(dir: string | true | undefined): Profiler {
  if (dir === undefined) return { start: async () => {}, stop: async () => null };
  const out = typeof dir === 'string' ? dir : path.join('results', 'profiles');
  let session: Session | null = null;
  return {
    async start() {
      session = new Session();
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 1000 });
      await session.post('Profiler.start');
    },
    async stop(name) {
      if (!session) return null;
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      session = null;
      fs.mkdirSync(out, { recursive: true });
      const file = path.join(out, `${name}.cpuprofile`);
      fs.writeFileSync(file, JSON.stringify(profile));
      return file;
    },
  };
}
