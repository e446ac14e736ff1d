import { echoOf } from '../../kernel/provider-ref';
import { sleep } from '../../kernel/sleep';
import type { ProviderLogger, ProviderOutcome, ReversalProvider, ReversalRequest } from './provider';

/** Options for {@link HttpReversalProvider}. */
export interface HttpReversalProviderOptions {
  /** Endpoint that receives `POST` reversals (http or https, no credentials in the URL: use `headers`). */
  url: string;
  /** Per-attempt deadline covering connect, response headers and body. Default 5000. */
  timeoutMs?: number;
  /** Deliveries per `send`, all under the same Idempotency-Key. Default 5. */
  maxAttempts?: number;
  /** Full-jitter backoff: the k-th retry waits uniform(0, min(maxDelayMs, baseDelayMs * 2^(k-1))). Default 100. */
  baseDelayMs?: number;
  /** Default 5000. */
  maxDelayMs?: number;
  /** Longest wait a provider's Retry-After can impose before the next attempt. Default `maxDelayMs`. */
  maxRetryAfterMs?: number;
  /** Extra headers (e.g. Authorization). They cannot override Idempotency-Key or Content-Type. */
  headers?: Record<string, string>;
  logger?: ProviderLogger;
  /** Adapter id reported as `provider.id`. Default `http:<host>`. */
  id?: string;
  /** Source of randomness for jitter, in [0, 1). Default Math.random. */
  random?: () => number;
}

/** Longest provider-supplied reason kept in an outcome. */
export const MAX_REASON_CHARS = 500;
/** Longest provider reference accepted. */
export const MAX_REFERENCE_CHARS = 500;

/** HTTP statuses in the 4xx range that mean "not now" rather than "no". */
const RETRYABLE_4XX = new Set([408, 409, 425, 429]);

type Attempt =
  | { kind: 'done'; outcome: ProviderOutcome }
  | { kind: 'transient'; reason: string; retryAfterMs?: number }
  | { kind: 'aborted' };

/**
 * Delivers reversals to an HTTP provider.
 *
 * Wire format: `POST <url>` with `Content-Type: application/json`, `Idempotency-Key: <req.idempotencyKey>` and body
 * `{ reversalId, effectId, effectKind, originalReference, amount, payload }` (`originalReference` is
 * `effectExternalRef`).
 *
 * Guarantees:
 * - Every attempt of one `send` carries the same Idempotency-Key and byte-identical body.
 * - `confirmed` only on a 2xx whose JSON body holds the provider's reference: the string field `reference`, or
 *   failing that `id`. A 2xx without one (or one that merely echoes our own ids) is a protocol violation and yields
 *   `retry_later`; a reference is never invented.
 * - `failed` only when the provider answered 4xx other than 408/409/425/429, with its reason (body `error`,
 *   `error.message`, `message`, or text; truncated to {@link MAX_REASON_CHARS}).
 * - 408/409/425/429/5xx, timeouts and connection errors are retried with full-jitter exponential backoff (Retry-After
 *   honoured, capped at `maxRetryAfterMs`), up to `maxAttempts`, then `retry_later`.
 * - Any other status (1xx/3xx; redirects are not followed) yields `retry_later` without further attempts.
 * - An outside abort stops promptly and yields `retry_later` (the last delivery may have landed).
 * - `send` does not reject for provider or network trouble.
 */
export class HttpReversalProvider implements ReversalProvider {
  readonly id: string;
  private readonly url: URL;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly headers: Record<string, string>;
  private readonly logger: ProviderLogger | undefined;
  private readonly random: () => number;

  constructor(opts: HttpReversalProviderOptions) {
    this.url = parseProviderUrl(opts.url);
    this.timeoutMs = positiveInt('timeoutMs', opts.timeoutMs ?? 5000);
    this.maxAttempts = positiveInt('maxAttempts', opts.maxAttempts ?? 5);
    this.baseDelayMs = nonNegative('baseDelayMs', opts.baseDelayMs ?? 100);
    this.maxDelayMs = nonNegative('maxDelayMs', opts.maxDelayMs ?? 5000);
    this.maxRetryAfterMs = nonNegative('maxRetryAfterMs', opts.maxRetryAfterMs ?? this.maxDelayMs);
    this.headers = { ...(opts.headers ?? {}) };
    this.logger = opts.logger;
    this.random = opts.random ?? Math.random;
    this.id = opts.id ?? `http:${this.url.host}`;
  }

  async send(req: ReversalRequest, opts: { signal?: AbortSignal } = {}): Promise<ProviderOutcome> {
    const signal = opts.signal;
    let body: string;
    try {
      body = JSON.stringify({
        reversalId: req.reversalId,
        effectId: req.effectId,
        effectKind: req.effectKind,
        originalReference: req.effectExternalRef,
        amount: req.amount,
        payload: req.payload,
      });
    } catch (err) {
      // Nothing was sent, and the same request can never be sent: permanent.
      return { outcome: 'failed', reason: `reversal request is not JSON-serialisable: ${errorMessage(err)}` };
    }
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [name, value] of Object.entries(this.headers)) {
      const lower = name.toLowerCase();
      if (lower !== 'idempotency-key' && lower !== 'content-type') headers[lower] = value;
    }
    headers['content-type'] = 'application/json';
    headers['idempotency-key'] = req.idempotencyKey;
    try {
      new Headers(headers);
    } catch (err) {
      // e.g. a key with characters HTTP headers cannot carry: no attempt could ever be delivered.
      return { outcome: 'failed', reason: `reversal request headers are invalid: ${errorMessage(err)}` };
    }

    const log = { provider: this.id, reversalId: req.reversalId, idempotencyKey: req.idempotencyKey };
    let lastReason = 'no attempt made';
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      if (signal?.aborted) return aborted(signal, attempt - 1);
      const result = await this.attempt(req, body, headers, signal);
      if (result.kind === 'done') {
        this.logger?.debug({ ...log, attempt, outcome: result.outcome.outcome }, 'provider answered');
        return result.outcome;
      }
      if (result.kind === 'aborted') return aborted(signal!, attempt);
      lastReason = result.reason;
      if (attempt === this.maxAttempts) break;
      const delayMs = this.delayBefore(attempt + 1, result.retryAfterMs);
      this.logger?.warn({ ...log, attempt, reason: result.reason, delayMs }, 'provider delivery failed; retrying');
      try {
        await sleep(delayMs, signal);
      } catch {
        return aborted(signal!, attempt);
      }
    }
    this.logger?.warn({ ...log, attempts: this.maxAttempts, reason: lastReason }, 'provider delivery gave up');
    return { outcome: 'retry_later', reason: `gave up after ${this.maxAttempts} attempt(s): ${lastReason}` };
  }

  /** Wait before attempt `next` (2..maxAttempts). */
  private delayBefore(next: number, retryAfterMs: number | undefined): number {
    if (retryAfterMs !== undefined) return Math.min(retryAfterMs, this.maxRetryAfterMs);
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (next - 2));
    return Math.floor(this.random() * ceiling);
  }

  private async attempt(
    req: ReversalRequest,
    body: string,
    headers: Record<string, string>,
    outer: AbortSignal | undefined,
  ): Promise<Attempt> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`timed out after ${this.timeoutMs}ms`));
    }, this.timeoutMs);
    const onOuterAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    try {
      const res = await fetch(this.url, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: controller.signal,
      });
      const text = await res.text();
      return classify(req, res.status, res.headers.get('retry-after'), text);
    } catch (err) {
      if (outer?.aborted) return { kind: 'aborted' };
      if (timedOut) return { kind: 'transient', reason: `timed out after ${this.timeoutMs}ms` };
      return { kind: 'transient', reason: `connection error: ${networkError(err)}` };
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
    }
  }
}

function classify(req: ReversalRequest, status: number, retryAfter: string | null, text: string): Attempt {
  if (status >= 200 && status < 300) {
    const ref = extractReference(text);
    if (ref === null) {
      return done(
        'retry_later',
        `protocol violation: HTTP ${status} without a provider reference (\`reference\` or \`id\`)`,
      );
    }
    const echo = echoOf(ref, [req.idempotencyKey, req.reversalId, req.effectId]);
    if (echo !== null) {
      return done('retry_later', `protocol violation: HTTP ${status} reference is ${echo}, not the provider's own`);
    }
    return { kind: 'done', outcome: { outcome: 'confirmed', providerRef: ref } };
  }
  if (status >= 400 && status < 500 && !RETRYABLE_4XX.has(status)) {
    return done('failed', `provider refused (HTTP ${status}): ${extractReason(text) ?? 'no reason given'}`);
  }
  if (RETRYABLE_4XX.has(status) || status >= 500) {
    const detail = extractReason(text);
    const retryAfterMs = parseRetryAfter(retryAfter);
    return {
      kind: 'transient',
      reason: `HTTP ${status}${detail ? `: ${detail}` : ''}`,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  }
  return done('retry_later', `protocol violation: unexpected HTTP ${status}`);
}

function done(outcome: 'failed' | 'retry_later', reason: string): Attempt {
  return { kind: 'done', outcome: { outcome, reason } };
}

/** The provider's reference from a 2xx body: `reference`, else `id`; non-empty strings only. */
function extractReference(text: string): string | null {
  const json = parseJson(text);
  if (!json || typeof json !== 'object') return null;
  const obj = json as Record<string, unknown>;
  for (const field of ['reference', 'id'] as const) {
    const v = obj[field];
    if (typeof v === 'string' && v.trim() !== '' && v.length <= MAX_REFERENCE_CHARS) return v;
  }
  return null;
}

function extractReason(text: string): string | null {
  const json = parseJson(text);
  let reason: string | null = null;
  if (json && typeof json === 'object') {
    const obj = json as Record<string, unknown>;
    const err = obj['error'];
    if (typeof err === 'string' && err.trim()) reason = err;
    else if (err && typeof err === 'object' && typeof (err as Record<string, unknown>)['message'] === 'string') {
      reason = (err as Record<string, string>)['message'] ?? null;
    } else if (typeof obj['message'] === 'string' && obj['message'].trim()) reason = obj['message'];
  }
  if (reason === null && text.trim()) reason = text.trim();
  return reason === null ? null : truncate(reason, MAX_REASON_CHARS);
}

/** Retry-After as milliseconds: delay-seconds or an HTTP-date. Undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

function aborted(signal: AbortSignal, attemptsMade: number): ProviderOutcome {
  return {
    outcome: 'retry_later',
    reason: `${abortReason(signal)} after ${attemptsMade} attempt(s)`,
  };
}

function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  const detail = r instanceof Error ? r.message : r === undefined ? '' : String(r);
  return `aborted${detail ? ` (${detail})` : ''}`;
}

function networkError(err: unknown): string {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const code = (cause as { code?: unknown } | null)?.code;
  const msg = cause instanceof Error ? cause.message : errorMessage(err);
  return typeof code === 'string' ? `${code} ${msg}` : msg;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Validates a provider endpoint: absolute http(s), no embedded credentials. Throws a clear Error otherwise. */
export function parseProviderUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    // The raw value is not echoed: it may carry a secret.
    throw new Error(`provider URL is not a valid absolute URL (${raw.length} characters)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`provider URL must be http or https, got ${url.protocol}`);
  }
  if (url.username || url.password) {
    throw new Error('provider URL must not embed credentials; pass them as headers (e.g. Authorization)');
  }
  return url;
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${v}`);
  return v;
}

function nonNegative(name: string, v: number): number {
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number, got ${v}`);
  return v;
}
