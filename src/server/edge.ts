import type http from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Limits } from './config';

/**
 * What happens at the HTTP edge before a request reaches GraphQL or MCP: media types read without
 * regard to case, an explicit CORS policy, and refusals for clients that send too slowly.
 */

/** Lower-cases the media types (not their parameters) of Content-Type and Accept: `APPLICATION/JSON` is application/json (RFC 9110 §8.3.1). */
export function normaliseMediaTypes(headers: http.IncomingHttpHeaders): void {
  const ct = headers['content-type'];
  if (typeof ct === 'string') headers['content-type'] = ct.replace(/^\s*[^;,\s]+/, (m) => m.toLowerCase());
  const accept = headers.accept;
  if (typeof accept === 'string')
    headers.accept = accept
      .split(',')
      .map((p) => p.replace(/^\s*[^;\s]+/, (m) => m.toLowerCase()))
      .join(',');
}

const ALLOW_METHODS = 'GET, POST, OPTIONS';
const ALLOW_HEADERS = 'authorization, content-type, accept, x-request-id, mcp-protocol-version';

/**
 * CORS: a browser may call the API from the origins in RETRACT_CORS_ORIGINS (`*` for any), and from
 * no other (the default: none; the dashboard is served from the same origin and needs none).
 * `decorate` adds the headers an allowed origin's response needs; `preflight` answers OPTIONS.
 */
export function corsPolicy(allowed: readonly string[]) {
  const any = allowed.includes('*');
  const admits = (origin: string | undefined): origin is string => !!origin && (any || allowed.includes(origin));
  return {
    /** Headers for the response to a request from `origin` (empty when it is not admitted). */
    headers(origin: string | undefined): Record<string, string> {
      return admits(origin) ? { 'access-control-allow-origin': origin, vary: 'Origin' } : {};
    },
    /** Answers an OPTIONS request: 204 (with the CORS grant when the origin is admitted), or 403 for a preflight from any other origin. */
    preflight(req: http.IncomingMessage, res: http.ServerResponse): void {
      const origin = req.headers.origin;
      const isPreflight = !!origin && !!req.headers['access-control-request-method'];
      if (isPreflight && !admits(origin)) {
        res.writeHead(403, { 'content-type': 'application/json', vary: 'Origin' });
        res.end(
          JSON.stringify({
            error: `cross-origin requests from ${origin} are not allowed; the server admits the origins listed in RETRACT_CORS_ORIGINS`,
          }),
        );
        return;
      }
      res.writeHead(204, {
        allow: ALLOW_METHODS,
        ...(isPreflight
          ? {
              'access-control-allow-origin': origin,
              'access-control-allow-methods': ALLOW_METHODS,
              'access-control-allow-headers': ALLOW_HEADERS,
              'access-control-max-age': '600',
              vary: 'Origin',
            }
          : {}),
      });
      res.end();
    },
  };
}

/** What corsPolicy answers with: the grant's headers, and OPTIONS answered. */
export type CorsPolicy = ReturnType<typeof corsPolicy>;

/** Options for http.createServer: a client gets `headersTimeoutMs` for its headers and `requestTimeoutMs` for the whole request. */
export function timeoutOptions(limits: Limits): http.ServerOptions {
  const requestTimeout = limits.requestTimeoutMs;
  const headersTimeout = Math.min(limits.headersTimeoutMs, requestTimeout);
  // Node looks for expired requests on this interval (30 s by default), so it bounds how late a refusal comes.
  const connectionsCheckingInterval = Math.max(100, Math.min(1_000, Math.floor(headersTimeout / 4)));
  return { requestTimeout, headersTimeout, connectionsCheckingInterval };
}

/**
 * Answers what Node refuses before a request reaches the handler with a JSON body instead of its
 * bare status line: 408 for a client too slow with its headers or body, 431 for oversized headers,
 * 400 for a malformed request. A connection reset needs no answer.
 */
export function refuseClientErrors(server: http.Server, log: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    const sent = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage?.headersSent;
    if (err.code === 'ECONNRESET' || !socket.writable || sent) {
      socket.destroy();
      return;
    }
    const [status, reason, message] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [
            408,
            'Request Timeout',
            'the request was not received in time; send the headers and the whole body without pausing',
          ]
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request Header Fields Too Large', 'the request headers are too large']
          : [400, 'Bad Request', 'the request is not valid HTTP'];
    if (status === 408) log.info({ remote: socket.remoteAddress }, 'request timed out');
    const body = JSON.stringify({
      errors: [{ message, extensions: { code: status === 408 ? 'REQUEST_TIMEOUT' : 'BAD_USER_INPUT' } }],
    });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  });
}

const EMPTY_REFUSALS: Record<number, string> = {
  405: 'method not allowed: send GraphQL requests with GET or POST',
  406: 'none of the accepted media types can be sent; accept application/graphql-response+json, application/json or text/event-stream',
  415: 'content-type must be application/json',
};

/** A JSON body for an HTTP refusal that came without one (GraphQL Yoga answers some statuses with an empty body). */
export function refusalBody(status: number): string {
  const message = EMPTY_REFUSALS[status] ?? `the request was refused (HTTP ${status})`;
  return JSON.stringify({ errors: [{ message, extensions: { code: 'BAD_USER_INPUT' } }] });
}

/**
 * A 404 with a code, like every other refusal; the path is not echoed. `message` says what to do
 * when there is more to say (the dashboard not built).
 */
export function notFound(message = 'not found: this server answers /graphql, /mcp, /health and /dashboard/'): {
  errors: Array<{ message: string; extensions: { code: 'NOT_FOUND' } }>;
} {
  return { errors: [{ message, extensions: { code: 'NOT_FOUND' } }] };
}

/**
 * The one inline style the dashboard's graph library (Cytoscape) injects, allowed by its hash:
 * sha256 of `.__________cytoscape_container { position: relative; }`.
 */
const CYTOSCAPE_STYLE = "'sha256-pgvDUBa4IjFA2yuSJ2cqcyxmNYJMborsd0ORcRv9vw8='";

/**
 * Headers on every dashboard response: a strict Content-Security-Policy (its own scripts, styles
 * and API only, nothing inline but Cytoscape's one rule), and no framing by any page
 * (`frame-ancestors 'none'`, and X-Frame-Options for browsers that predate it): the dashboard holds
 * a token and a retract form, which a framing page could trick a user into pressing.
 */
export const DASHBOARD_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' ${CYTOSCAPE_STYLE}`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const CODE_BY_STATUS: Record<number, string> = {
  400: 'BAD_USER_INPUT',
  401: 'UNAUTHENTICATED',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'BAD_USER_INPUT',
  500: 'INTERNAL_SERVER_ERROR',
};

/** The provider callback's `{ error }` refusals (its own wire format) with the documented `code` beside the message. */
export function callbackBody(status: number, body: Record<string, unknown>): Record<string, unknown> {
  return status >= 400 && CODE_BY_STATUS[status] ? { ...body, code: CODE_BY_STATUS[status] } : body;
}
