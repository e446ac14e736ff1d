import type http from 'node:http';

/** Answers `status` with `body` as JSON: the shape of every refusal and probe the edge writes itself. */
export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
