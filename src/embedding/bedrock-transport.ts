/**
 * Shared plumbing for every Bedrock Runtime call RETRACT makes (Titan embeddings, Claude adjudication):
 * client construction from the standard AWS provider chain, a hard per-attempt timeout, classification of
 * failures, and bounded retries with jittered exponential backoff.
 *
 * The SDK's own retry loop is switched off (`maxAttempts: 1` on the client) so that attempts, timeouts and
 * backoff are counted in exactly one place.
 */
import { BedrockRuntimeClient, type BedrockRuntimeClientConfig } from '@aws-sdk/client-bedrock-runtime';
import { sleep } from '../kernel/sleep';

/** Static credentials or a credential provider, exactly as the SDK accepts them. */
type BedrockCredentials = NonNullable<BedrockRuntimeClientConfig['credentials']>;

/** Where and as whom to call Bedrock. Anything left out comes from the standard AWS provider chain. */
export interface BedrockConnectionOptions {
  /** Endpoint override (tests, VPC endpoints). Defaults to `env.RETRACT_BEDROCK_ENDPOINT`, then the SDK's own. */
  endpoint?: string;
  /** AWS region. Defaults to the SDK's resolution (AWS_REGION, shared config). */
  region?: string;
  /** Credentials. Defaults to the SDK's default provider chain. */
  credentials?: BedrockCredentials;
  /** Environment to read `RETRACT_BEDROCK_*` variables from. Defaults to `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** A ready client; when given, endpoint/region/credentials are ignored and the caller owns it. */
  client?: BedrockRuntimeClient;
}

/** Bounds on one logical call. */
export interface RetryPolicy {
  /** Hard limit for a single attempt, in milliseconds. */
  timeoutMs: number;
  /** Total attempts including the first (≥ 1). */
  maxAttempts: number;
  /** First backoff step, in milliseconds; doubles each retry. */
  baseDelayMs: number;
  /** Cap on a single backoff step, in milliseconds. */
  maxDelayMs: number;
}

/** The caller's policy: each bound it sets, else the model's default. */
export function retryPolicy(given: Partial<RetryPolicy>, defaults: RetryPolicy): RetryPolicy {
  return {
    timeoutMs: given.timeoutMs ?? defaults.timeoutMs,
    maxAttempts: given.maxAttempts ?? defaults.maxAttempts,
    baseDelayMs: given.baseDelayMs ?? defaults.baseDelayMs,
    maxDelayMs: given.maxDelayMs ?? defaults.maxDelayMs,
  };
}

/**
 * Builds a Bedrock Runtime client with SDK retries disabled (see module comment). Region and credentials
 * come from options when given, else from the standard AWS provider chain.
 */
export function createBedrockRuntimeClient(o: BedrockConnectionOptions = {}): BedrockRuntimeClient {
  if (o.client) return o.client;
  const env = o.env ?? process.env;
  const endpoint = o.endpoint ?? (env.RETRACT_BEDROCK_ENDPOINT?.trim() || undefined);
  const config: BedrockRuntimeClientConfig = { maxAttempts: 1 };
  if (endpoint) config.endpoint = endpoint;
  if (o.region) config.region = o.region;
  if (o.credentials) config.credentials = o.credentials;
  return new BedrockRuntimeClient(config);
}

/** Why an attempt failed. `throttled`, `server`, `timeout` and `network` are retried; the rest are not. */
export type FailureKind = 'throttled' | 'server' | 'timeout' | 'network' | 'malformed' | 'client' | 'aborted';

const RETRYABLE: ReadonlySet<FailureKind> = new Set(['throttled', 'server', 'timeout', 'network']);

/** A Bedrock call that failed for good: after its retries, or at once for a non-retryable cause. */
export class BedrockCallError extends Error {
  constructor(
    message: string,
    readonly kind: FailureKind,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BedrockCallError';
  }
}

const THROTTLING_NAMES = new Set(['ThrottlingException', 'TooManyRequestsException', 'ModelNotReadyException']);
const SERVER_NAMES = new Set(['InternalServerException', 'ServiceUnavailableException', 'ModelErrorException']);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ECONNABORTED',
]);

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  $retryable?: { throttling?: boolean } | undefined;
}

function httpStatus(e: unknown): number | undefined {
  const s = (e as ErrorLike | null)?.$metadata?.httpStatusCode;
  return typeof s === 'number' ? s : undefined;
}

/** Classifies one attempt's error (our own timeout and the caller's abort are decided before this). */
export function classifyFailure(e: unknown): FailureKind {
  const err = (e ?? {}) as ErrorLike;
  const name = typeof err.name === 'string' ? err.name : '';
  const code = typeof err.code === 'string' ? err.code : '';
  const status = httpStatus(e);
  if (status === 429 || THROTTLING_NAMES.has(name)) return 'throttled';
  if (status === 408 || name === 'ModelTimeoutException' || name === 'TimeoutError') return 'timeout';
  if ((status !== undefined && status >= 500) || SERVER_NAMES.has(name)) return 'server';
  if (NETWORK_CODES.has(code) || code.startsWith('ERR_HTTP2') || code === 'ERR_STREAM_PREMATURE_CLOSE')
    return 'network';
  if (err.$retryable) return err.$retryable.throttling ? 'throttled' : 'server';
  if (status !== undefined && status >= 200 && status < 300) return 'malformed';
  return 'client';
}

/** One line naming an error: `Name (HTTP 503): message`. */
export function describeError(e: unknown): string {
  const err = (e ?? {}) as ErrorLike;
  const name = typeof err.name === 'string' && err.name ? err.name : 'Error';
  const status = httpStatus(e);
  const msg = typeof err.message === 'string' ? err.message.split('\n')[0]! : String(e);
  return `${name}${status !== undefined ? ` (HTTP ${status})` : ''}: ${msg}`;
}

const KIND_TEXT: Record<FailureKind, string> = {
  throttled: 'throttled',
  server: 'server error',
  timeout: 'timed out',
  network: 'network error',
  malformed: 'malformed response',
  client: 'request rejected',
  aborted: 'aborted by caller',
};

/** Backoff before retry number `retry` (1-based): "equal jitter" over min(cap, base·2^(retry-1)). */
export function backoffDelay(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

class AttemptTimeout extends Error {
  constructor(ms: number) {
    super(`no response within ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/**
 * Runs `attempt` until it succeeds or the policy is exhausted.
 *
 * Guarantees: at most `maxAttempts` attempts; each attempt is abandoned (its signal aborted, its promise
 * ignored) after `timeoutMs`; only throttling, 5xx, timeouts and network errors are retried, with
 * equal-jitter exponential backoff; the caller's `signal` stops everything at once. Any failure surfaces as
 * a {@link BedrockCallError} whose message names `operation`, the attempts, and the last cause.
 */
export async function callWithRetry<T>(
  operation: string,
  attempt: (signal: AbortSignal) => Promise<T>,
  policy: RetryPolicy,
  callerSignal?: AbortSignal,
): Promise<T> {
  const maxAttempts = Math.max(1, Math.floor(policy.maxAttempts));
  let last: unknown;
  let lastKind: FailureKind = 'client';
  let made = 0;
  for (let n = 1; n <= maxAttempts; n++) {
    if (callerSignal?.aborted) {
      throw new BedrockCallError(`${operation}: aborted by caller`, 'aborted', n - 1, { cause: callerSignal.reason });
    }
    const ctl = new AbortController();
    const onCallerAbort = () => ctl.abort(callerSignal!.reason);
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new AttemptTimeout(policy.timeoutMs);
        ctl.abort(err);
        reject(err);
      }, policy.timeoutMs);
    });
    const aborted = new Promise<never>((_, reject) => {
      ctl.signal.addEventListener('abort', () => reject(ctl.signal.reason), { once: true });
    });
    made = n;
    const work = attempt(ctl.signal);
    work.catch(() => undefined); // may settle after we stop waiting
    timeout.catch(() => undefined);
    aborted.catch(() => undefined);
    try {
      return await Promise.race([work, timeout, aborted]);
    } catch (e) {
      last = e;
      if (callerSignal?.aborted) {
        throw new BedrockCallError(`${operation}: aborted by caller`, 'aborted', n, { cause: callerSignal.reason });
      }
      lastKind = e instanceof AttemptTimeout ? 'timeout' : classifyFailure(e);
      if (!RETRYABLE.has(lastKind) || n === maxAttempts) break;
      try {
        await sleep(backoffDelay(n, policy), callerSignal);
      } catch (reason) {
        throw new BedrockCallError(`${operation}: aborted by caller`, 'aborted', n, { cause: reason });
      }
    } finally {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    }
  }
  const tried = `after ${made} attempt${made === 1 ? '' : 's'}${RETRYABLE.has(lastKind) ? '' : ' (not retryable)'}`;
  throw new BedrockCallError(
    `${operation} failed ${tried}: ${KIND_TEXT[lastKind]} — ${describeError(last)}`,
    lastKind,
    made,
    {
      cause: last,
    },
  );
}

/** Outcome of {@link checkBedrockAccess}. */
export type BedrockAccessCheck =
  { ok: true; region: string; credentials: string } | { ok: false; missing: 'credentials' | 'region'; reason: string };

/**
 * Tells whether a Bedrock call could be signed here, without calling Bedrock: a region must resolve, and
 * credentials must resolve (a bearer token in `AWS_BEARER_TOKEN_BEDROCK`, or the default SigV4 provider
 * chain). Never throws; gives up after `timeoutMs` (the instance-metadata lookup can hang off-cloud).
 */
export async function checkBedrockAccess(
  o: BedrockConnectionOptions = {},
  timeoutMs = 5000,
): Promise<BedrockAccessCheck> {
  const env = o.env ?? process.env;
  const client = createBedrockRuntimeClient(o);
  let timer: NodeJS.Timeout | undefined;
  const within = <T>(p: Promise<T>, what: string) =>
    Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} lookup took longer than ${timeoutMs} ms`)), timeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  try {
    let region: string;
    try {
      region = await within(client.config.region(), 'region');
      if (!region) throw new Error('no region configured');
    } catch (e) {
      return { ok: false, missing: 'region', reason: `no AWS region resolvable (set AWS_REGION): ${describeError(e)}` };
    }
    if (env.AWS_BEARER_TOKEN_BEDROCK?.trim())
      return { ok: true, region, credentials: 'bearer token from AWS_BEARER_TOKEN_BEDROCK' };
    try {
      const creds = await within(client.config.credentials(), 'credential');
      if (!creds?.accessKeyId) throw new Error('the provider chain returned no access key');
      return { ok: true, region, credentials: `access key ${creds.accessKeyId.slice(0, 4)}…` };
    } catch (e) {
      return { ok: false, missing: 'credentials', reason: `no AWS credentials resolvable: ${describeError(e)}` };
    }
  } finally {
    if (!o.client) client.destroy();
  }
}
