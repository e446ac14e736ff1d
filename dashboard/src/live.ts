// The live feed: `retractionEvents` over graphql-ws, resumed from the last cursor after any reconnect.
//
// Two layers keep it lossless:
// 1. graphql-ws retries the socket (retryAttempts: Infinity) and re-sends every active subscription on the new
//    socket. It re-sends the *same payload object*, so `payload.variables.after` is updated to the last cursor
//    on every event: the re-sent subscription resumes exactly after the last event this page saw.
// 2. If a subscription ends anyway (the server completed it or sent an error), we subscribe again ourselves
//    with `after: lastCursor`, with backoff.
// Events are de-duplicated by cursor, so a server that replays the cursor's own event does no harm.
import { createClient, type Client } from 'graphql-ws';
import { subscribe } from '../../src/client';
import { RETRACTION_EVENTS } from './operations';
import type { RetractionEvent } from './types';

export type ConnState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting' | 'unauthorized';

export interface ConnInfo {
  reconnects: number;
  lastCursor: string | null;
  message?: string;
}

export interface LiveFeedOptions {
  url: string;
  token: string;
  onEvent: (ev: RetractionEvent) => void;
  onState: (state: ConnState, info: ConnInfo) => void;
  onError?: (message: string) => void;
}

interface Payload {
  query: string;
  variables: { after?: string | null };
}

const UNAUTHORIZED_CODES = new Set([4401, 4403]);
/** GraphQL error codes after which retrying cannot help: the token is wrong or lacks `receipts:read`. */
const DENIED_CODES = new Set(['UNAUTHENTICATED', 'FORBIDDEN']);

interface GraphQLErrorLike {
  message?: string;
  extensions?: Record<string, unknown>;
}

function closeCode(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'code' in err && typeof (err as { code: unknown }).code === 'number') {
    return (err as { code: number }).code;
  }
  return undefined;
}

function describe(err: unknown): string {
  if (Array.isArray(err)) return err.map((e: { message?: string }) => e?.message ?? String(e)).join('; ');
  if (err instanceof Error) return err.message;
  const code = closeCode(err);
  if (code !== undefined) {
    const reason = (err as { reason?: string }).reason;
    return `socket closed (${code}${reason ? `: ${reason}` : ''})`;
  }
  return String(err);
}

export class LiveFeed {
  lastCursor: string | null = null;
  reconnects = 0;
  state: ConnState = 'disconnected';

  private client: Client | null = null;
  private dispose: (() => void) | null = null;
  private payload: Payload | null = null;
  private seen = new Set<string>();
  private seenOrder: string[] = [];
  private stopped = false;
  private everConnected = false;
  private resubscribeTimer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  /** The server refused this token the feed; no retry until the next sign-in. */
  private denied = false;

  constructor(private readonly opts: LiveFeedOptions) {}

  start(): void {
    this.stopped = false;
    const { token } = this.opts;
    this.client = createClient({
      url: this.opts.url,
      connectionParams: () => ({ authorization: `Bearer ${token}` }),
      lazy: true,
      keepAlive: 15_000,
      connectionAckWaitTimeout: 10_000,
      retryAttempts: Infinity,
      shouldRetry: () => true,
      retryWait: async (retries) => {
        const ms = Math.min(500 * 2 ** retries, 8_000) + Math.floor(Math.random() * 400);
        await new Promise((r) => setTimeout(r, ms));
      },
      on: {
        connecting: (isRetry) => {
          if (!this.denied) this.setState(isRetry || this.everConnected ? 'reconnecting' : 'connecting');
        },
        connected: (_socket, _payload, wasRetry) => {
          if (this.denied) return;
          if (wasRetry || this.everConnected) this.reconnects++;
          this.everConnected = true;
          // `failures` is not reset here: a refused subscription reconnects every time, and only an event proves
          // the subscription itself works (see accept).
          this.setState('connected');
        },
        closed: (event) => {
          if (this.stopped) return this.setState('disconnected');
          if (this.denied) return; // the socket closes because no subscription is left: not a network problem
          const code = closeCode(event);
          if (code !== undefined && UNAUTHORIZED_CODES.has(code)) return this.setState('unauthorized', describe(event));
          this.setState('reconnecting', describe(event));
        },
      },
    });
    this.subscribe();
  }

  stop(): void {
    this.stopped = true;
    if (this.resubscribeTimer) clearTimeout(this.resubscribeTimer);
    this.resubscribeTimer = null;
    this.dispose?.();
    this.dispose = null;
    void this.client?.dispose();
    this.client = null;
    this.setState('disconnected');
  }

  /** Drops the socket as a network failure would (close 4499); the client reconnects and resumes. */
  dropConnection(): void {
    this.client?.terminate();
  }

  private subscribe(): void {
    if (!this.client || this.stopped || this.denied) return;
    // The server reports a subscription it refuses (missing scope, bad cursor) as one `next` carrying only errors,
    // then `complete`; graphql-ws reserves `error` for documents that fail validation. Both end up in `failed`.
    let refused: GraphQLErrorLike[] | null = null;
    const sub = subscribe(
      this.client,
      RETRACTION_EVENTS,
      { after: this.lastCursor },
      {
        next: (result) => {
          const ev = result.data?.retractionEvents;
          if (ev) this.accept(ev);
          else if (result.errors?.length) refused = [...result.errors];
          if (ev && result.errors?.length) this.opts.onError?.(`Live feed: ${describe(result.errors)}`);
        },
        error: (err) => {
          this.dispose = null;
          const code = closeCode(err);
          if (code !== undefined && UNAUTHORIZED_CODES.has(code)) {
            this.setState('unauthorized', describe(err));
            return;
          }
          if (Array.isArray(err)) return this.failed(err as GraphQLErrorLike[]);
          this.opts.onError?.(`Live feed: ${describe(err)}`);
          this.failures++;
          this.scheduleResubscribe();
        },
        complete: () => {
          this.dispose = null;
          if (this.stopped) return;
          if (refused) return this.failed(refused);
          this.scheduleResubscribe();
        },
      },
    ); // graphql-ws re-sends this very payload after a reconnect; accept() moves its cursor on.
    this.dispose = sub.unsubscribe;
    this.payload = sub.payload;
  }

  /** The server refused the subscription: stop for good on an auth refusal, otherwise retry with backoff. */
  private failed(errors: GraphQLErrorLike[]): void {
    const message = describe(errors);
    if (errors.some((e) => DENIED_CODES.has(String(e.extensions?.code)))) {
      this.denied = true;
      this.setState('unauthorized', message);
      this.opts.onError?.(`Live feed: ${message}`);
      return;
    }
    this.opts.onError?.(`Live feed: ${message}`);
    this.failures++;
    // A server that keeps rejecting the cursor (e.g. expired) would loop forever: after a few tries, go on from now
    // and say so.
    if (this.failures >= 3 && this.lastCursor) {
      this.opts.onError?.(
        'Live feed: the server rejected the resume cursor; continuing from now (events may be missing).',
      );
      this.lastCursor = null;
    }
    this.scheduleResubscribe();
  }

  private scheduleResubscribe(): void {
    if (this.stopped || this.resubscribeTimer) return;
    const ms = Math.min(1_000 * 2 ** Math.max(0, this.failures - 1), 15_000);
    this.resubscribeTimer = setTimeout(() => {
      this.resubscribeTimer = null;
      this.subscribe();
    }, ms);
  }

  private accept(ev: RetractionEvent): void {
    if (this.seen.has(ev.cursor)) return;
    this.seen.add(ev.cursor);
    this.seenOrder.push(ev.cursor);
    if (this.seenOrder.length > 5_000) this.seen.delete(this.seenOrder.shift()!);
    this.lastCursor = ev.cursor;
    if (this.payload) this.payload.variables.after = ev.cursor; // what graphql-ws re-sends on reconnect
    this.failures = 0;
    this.opts.onEvent(ev);
    this.emit();
  }

  private setState(state: ConnState, message?: string): void {
    this.state = state;
    this.emit(message);
  }

  private emit(message?: string): void {
    this.opts.onState(this.state, { reconnects: this.reconnects, lastCursor: this.lastCursor, message });
  }
}
