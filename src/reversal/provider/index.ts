import { HttpReversalProvider, parseProviderUrl } from './http';
import type { ProviderLogger, ReversalProvider } from './provider';

export type { ProviderLogger, ReversalProvider } from './provider';
export { HttpReversalProvider } from './http';
export type { HttpReversalProviderOptions } from './http';
export { signBody } from './webhook';

/**
 * The configured provider, or null when `RETRACT_PROVIDER_URL` is unset or blank (reversals then stay OWED: nothing
 * is dispatched and nothing is confirmed). Reads `RETRACT_PROVIDER_URL` and optional `RETRACT_PROVIDER_TIMEOUT_MS`
 * (positive integer). Throws an Error naming the variable when either is malformed.
 */
export function createProvider(
  env: Record<string, string | undefined> = process.env,
  opts: { logger?: ProviderLogger } = {},
): ReversalProvider | null {
  const rawUrl = env['RETRACT_PROVIDER_URL']?.trim();
  if (!rawUrl) return null;
  try {
    parseProviderUrl(rawUrl);
  } catch (err) {
    throw new Error(`RETRACT_PROVIDER_URL: ${(err as Error).message}`);
  }
  const rawTimeout = env['RETRACT_PROVIDER_TIMEOUT_MS']?.trim();
  let timeoutMs: number | undefined;
  if (rawTimeout) {
    if (!/^\d+$/.test(rawTimeout) || Number(rawTimeout) < 1 || !Number.isSafeInteger(Number(rawTimeout))) {
      throw new Error(
        `RETRACT_PROVIDER_TIMEOUT_MS must be a positive integer of milliseconds, got ${JSON.stringify(rawTimeout)}`,
      );
    }
    timeoutMs = Number(rawTimeout);
  }
  return new HttpReversalProvider({
    url: rawUrl,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  });
}
