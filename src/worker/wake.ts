import type { Store } from '../store/engine';

/** Structured logger the workers write to (pino fits). */
export interface WorkerLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: WorkerLogger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * A poll timer that commits can cut short: `wait(ms)` resolves after `ms`, on the next commit notice (this process's
 * commits, and other processes' through LISTEN where the engine has it), or when `signal` aborts.
 */
export async function commitWaker(store: Store, signal: AbortSignal | undefined) {
  let pending = false;
  let wake: (() => void) | null = null;
  const poke = () => {
    pending = true;
    wake?.();
  };
  store.commits.on('commit', poke);
  let unlisten: () => Promise<void> = async () => {};
  try {
    unlisten = await store.listen(poke);
  } catch {
    /* no cross-process wake-up: polling alone still works */
  }
  return {
    wait(ms: number): Promise<void> {
      if (pending || signal?.aborted) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          wake = null;
          pending = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener('abort', done, { once: true });
        wake = done;
      });
    },
    async close() {
      store.commits.off('commit', poke);
      await unlisten().catch(() => {});
    },
  };
}

/** Sleeps `ms`, or less when `signal` aborts. Never rejects. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
