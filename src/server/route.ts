import type http from 'node:http';

/**
 * One path the HTTP edge answers. src/server/serve-routes.ts tries the routes in the order createApp
 * lists them and the first that matches answers; a request no route matches gets a coded 404.
 */
export interface Route {
  /** Whether this route answers `method` on `pathname`. */
  matches(pathname: string, method: string): boolean;
  /** A probe (/health, /ready, /metrics): not a request a drain waits for (src/server/drain.ts). */
  readonly probe?: boolean;
  /** Answers the request; what it throws the edge logs and answers 500. */
  handle(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> | void;
}
