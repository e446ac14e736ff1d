/** Structured logger the workers write to (pino fits). */
export interface WorkerLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: WorkerLogger = { debug() {}, info() {}, warn() {}, error() {} };

/** An error as one line of a log record. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
