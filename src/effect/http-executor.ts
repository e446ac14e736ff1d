import { parseProviderUrl } from '../reversal/provider/http';
import type { EffectAdapter } from './executor';

export interface HttpExecutorOptions {
  /** Base URL; an effect of kind K is posted to `<baseUrl>/K`. */
  baseUrl: string;
  /** Per-call deadline. Default 10000. */
  timeoutMs?: number;
  /** Extra headers (e.g. Authorization); they cannot override Idempotency-Key or Content-Type. */
  headers?: Record<string, string>;
}

const RETRYABLE_4XX = new Set([408, 409, 425, 429]);

/**
 * An adapter that executes effects over HTTP: `POST <baseUrl>/<kind>` with `Idempotency-Key: <effect key>` and body
 * `{ effectId, kind, amount, payload }`.
 * - 2xx whose JSON holds a string `reference` (or `id`) that is not one of our ids → `{ ok: true, ref }`.
 * - 4xx other than 408/409/425/429 → `{ ok: false, reason }` (the service refused: nothing happened).
 * - anything else (5xx, timeouts, connection errors, a 2xx without a reference) → throws: unknown outcome, so the
 *   executor calls again under the same key.
 */
export function httpExecutorAdapter(opts: HttpExecutorOptions): EffectAdapter {
  const base = parseProviderUrl(opts.baseUrl);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const extra: Record<string, string> = {};
  for (const [k, val] of Object.entries(opts.headers ?? {})) {
    const lower = k.toLowerCase();
    if (lower !== 'idempotency-key' && lower !== 'content-type') extra[lower] = val;
  }
  return async (effect, ctx) => {
    const url = new URL(base.href.replace(/\/+$/, '') + '/' + encodeURIComponent(effect.kind));
    const body = JSON.stringify({
      effectId: effect.id,
      kind: effect.kind,
      amount:
        effect.amount_minor !== null && effect.currency !== null
          ? { amountMinor: Number(effect.amount_minor), currency: effect.currency }
          : null,
      payload: effect.payload ?? null,
    });
    const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(timeoutMs)]);
    const res = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        ...extra,
        accept: 'application/json',
        'content-type': 'application/json',
        'idempotency-key': effect.idempotency_key,
      },
      body,
      signal,
    });
    const text = await res.text();
    let json: Record<string, unknown> | null = null;
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed && typeof parsed === 'object') json = parsed as Record<string, unknown>;
    } catch {
      /* not JSON */
    }
    if (res.status >= 200 && res.status < 300) {
      const ref = [json?.['reference'], json?.['id']].find(
        (x): x is string => typeof x === 'string' && x.trim() !== '' && x.length <= 200,
      );
      if (!ref || ref === effect.id || ref === effect.idempotency_key)
        throw new Error(`HTTP ${res.status} without an executor reference`);
      return { ok: true, ref };
    }
    if (res.status >= 400 && res.status < 500 && !RETRYABLE_4XX.has(res.status)) {
      const err = json?.['error'];
      const reason =
        typeof err === 'string'
          ? err
          : typeof json?.['message'] === 'string'
            ? (json['message'] as string)
            : text.trim();
      return {
        ok: false,
        reason: `executor refused (HTTP ${res.status}): ${(reason || 'no reason given').slice(0, 500)}`,
      };
    }
    throw new Error(`HTTP ${res.status}: outcome unknown`);
  };
}
