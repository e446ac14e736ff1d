import type { IncomingMessage } from 'node:http';
import type { VerifyClientCallbackAsync } from 'ws';
import type { AgentRow } from '../agent/agent.repository';

/**
 * Who a graphql-ws connection acts for, read where clients put it, and the cap on sockets that have
 * not proved anyone yet. graphql-ws's `onConnect` refusal closes with 4403 (Forbidden) before
 * `connection_ack`, so a client learns at connect time that its token is missing or wrong instead
 * of holding a socket on which every operation then fails.
 */

/** Bearer token from an `Authorization` value (an HTTP header, or what {@link wsAuthorization} found). */
export function bearer(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return m ? m[1]! : null;
}

/** The first string that a client put under one of graphql-ws's customary keys. */
function fromParams(params: Readonly<Record<string, unknown>> | undefined): string | null {
  if (!params || typeof params !== 'object') return null;
  const headers =
    params.headers && typeof params.headers === 'object' ? (params.headers as Record<string, unknown>) : {};
  for (const v of [params.authorization, params.Authorization, headers.Authorization, headers.authorization]) {
    if (typeof v === 'string') return v;
  }
  return null;
}

/**
 * The `Authorization` value of a WebSocket connection: the upgrade request's header (what Node and
 * server-side clients send), else `connection_init`'s `authorization`, `Authorization` or
 * `headers.Authorization` (what browsers, which cannot set upgrade headers, send). Null when none is.
 */
function wsAuthorization(
  request: IncomingMessage | undefined,
  params: Readonly<Record<string, unknown>> | undefined,
): string | null {
  const header = request?.headers.authorization;
  return typeof header === 'string' && header !== '' ? header : fromParams(params);
}

/** The remote address a socket came from (what the per-address cap counts by). */
export function remoteAddress(request: IncomingMessage): string {
  return request.socket.remoteAddress ?? 'unknown';
}

/**
 * Sockets from one address that have not authenticated yet (upgraded, no `connection_ack` for a
 * token), or that were admitted anonymously. An address at `max` is refused the upgrade with 429:
 * without a cap one client could hold sockets (and their keep-alive timers) by the thousand.
 */
export class UnauthenticatedSockets {
  private readonly open = new Map<string, number>();
  constructor(private readonly max: number) {}

  /** For ws's `verifyClient`: refuses the upgrade with 429 when the address is at the cap. */
  readonly verifyClient: VerifyClientCallbackAsync = (info, done) => {
    if ((this.open.get(remoteAddress(info.req)) ?? 0) >= this.max) {
      return done(
        false,
        429,
        'too many unauthenticated WebSocket connections from this address; authenticate (connection_init) or close some',
      );
    }
    done(true);
  };

  /** Counts a socket that has just been upgraded; the returned function (idempotent) stops counting it. */
  hold(address: string): () => void {
    this.open.set(address, (this.open.get(address) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(address) ?? 1) - 1;
      if (left > 0) this.open.set(address, left);
      else this.open.delete(address);
    };
  }
}

/** What graphql-ws's `extra` carries for {@link wsConnect}: the upgrade request, and how to stop counting the socket as unauthenticated. */
export interface WsAuthExtra {
  request: IncomingMessage;
  /** Stops counting this socket against its address's cap (it authenticated). */
  authenticated(): void;
  /** The `Authorization` value the connection acts with, once `onConnect` admitted it; operations authenticate with it. */
  authorization?: string | null;
}

/**
 * graphql-ws's `onConnect`: a valid bearer token is acknowledged and stops counting against the
 * address's cap; a missing one is acknowledged only when `anonymous` (RETRACT_WS_ANONYMOUS) and then
 * keeps counting; a malformed or unknown one is always refused. Refused is `false`: graphql-ws
 * closes with 4403 Forbidden and never sends `connection_ack`.
 */
export function wsConnect(authenticate: (token: string) => Promise<AgentRow | null>, anonymous: boolean) {
  return async (ctx: {
    extra: WsAuthExtra;
    connectionParams?: Readonly<Record<string, unknown>>;
  }): Promise<boolean> => {
    const authorization = wsAuthorization(ctx.extra.request, ctx.connectionParams);
    if (authorization === null) {
      ctx.extra.authorization = null;
      return anonymous;
    }
    const token = bearer(authorization);
    if (!token || !(await authenticate(token))) return false;
    ctx.extra.authorization = authorization;
    ctx.extra.authenticated();
    return true;
  };
}
