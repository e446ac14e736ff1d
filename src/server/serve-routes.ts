import type http from 'node:http';
import type { Logger } from 'pino';
import type { Drain } from './drain';
import { type CorsPolicy, normaliseMediaTypes, notFound } from './edge';
import type { Route } from './route';
import { sendJson } from './send-json';

/**
 * The HTTP edge in front of every route: media types read without regard to case, CORS (preflights
 * answered here, the grant on every answer), requests counted for the drain, the first matching
 * route, a coded 404 when none matches, and a 500 for what a route throws.
 */
export function serveRoutes(
  routes: readonly Route[],
  edge: { cors: CorsPolicy; drain: Drain; log: Logger },
): http.RequestListener {
  return async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = routes.find((r) => r.matches(url.pathname, req.method ?? ''));
    if (!route?.probe) edge.drain.track(res);
    try {
      normaliseMediaTypes(req.headers);
      if (req.method === 'OPTIONS') return edge.cors.preflight(req, res);
      for (const [k, v] of Object.entries(edge.cors.headers(req.headers.origin))) res.setHeader(k, v);
      if (!route) return sendJson(res, 404, notFound());
      await route.handle(req, res, url);
    } catch (e) {
      // A client that went away mid-request (or was timed out) needs no answer and is not a server fault.
      if (req.destroyed && !res.headersSent) return void edge.log.debug({ err: e }, 'client went away');
      edge.log.error({ err: e }, 'request failed');
      if (!res.headersSent)
        sendJson(res, 500, { errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
      else res.end();
    }
  };
}
