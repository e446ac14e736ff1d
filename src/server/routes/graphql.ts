import type http from 'node:http';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Context } from '../../api/builder';
import { readBody } from '../../mcp/http';
import type { Drain } from '../drain';
import { refusalBody } from '../edge';
import { answerPost } from '../graphql-post';
import type { Route } from '../route';
import { sendJson } from '../send-json';

/** A coded refusal of the client's request, written before Yoga sees it. */
const refuse = (res: http.ServerResponse, status: number, message: string, code = 'BAD_USER_INPUT') =>
  sendJson(res, status, { errors: [{ message, extensions: { code } }] });

/**
 * /graphql over HTTP (queries, mutations, SSE subscriptions, GraphiQL's page), answered by Yoga. Refused
 * here first: new work while draining (503), a body over `maxBodyBytes` (413), one that is not JSON
 * (415), an empty batch (400). Yoga's answer is then written back: an empty refusal given a coded JSON
 * body, a single result in one write, a stream (SSE) piped until the client goes away.
 */
export function graphqlRoute(
  yoga: YogaServerInstance<Record<string, unknown>, Context>,
  drain: Drain,
  maxBodyBytes: number,
): Route {
  return {
    matches: (pathname) => pathname === '/graphql',
    async handle(req, res) {
      if (drain.draining) return refuse(res, 503, 'server is shutting down', 'UNAVAILABLE');
      let body: Buffer | undefined;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        const b = await readBody(req, maxBodyBytes);
        if (!b) return refuse(res, 413, 'the request body is too large; send a smaller request');
        body = b;
        const type = String(req.headers['content-type'] ?? '')
          .split(';')[0]!
          .trim()
          .toLowerCase();
        if (type !== 'application/json' && type !== 'application/graphql-response+json')
          return refuse(res, 415, 'content-type must be application/json');
        if (/^\s*\[\s*\]\s*$/.test(body.toString('utf8', 0, Math.min(body.length, 64))) && body.length < 64)
          return refuse(res, 400, 'an empty batch is not a request');
        // A single operation in JSON: the same envelop without Yoga's fetch-API request pipeline (../graphql-post.ts).
        const answer =
          req.method === 'POST' && type === 'application/json' ? await answerPost(yoga, req.headers, b) : null;
        if (answer) {
          res.writeHead(answer.status, { ...answer.headers, 'content-length': String(Buffer.byteLength(answer.body)) });
          return void res.end(answer.body);
        }
      }
      const request = new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`), {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: body && body.length > 0 ? new Uint8Array(body) : undefined,
      });
      await writeResponse(await yoga.fetch(request, {}), req, res);
    },
  };
}

/** Writes Yoga's Response to Node's ServerResponse. */
async function writeResponse(response: Response, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((v, k) => (headers[k] = v));
  if (response.status >= 400 && !headers['content-type']) {
    const text = await response.text();
    const body = text || refusalBody(response.status);
    res.writeHead(response.status, {
      ...headers,
      'content-type': text ? 'text/plain; charset=utf-8' : 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    });
    return void res.end(body);
  }
  if (req.method !== 'HEAD' && /^application\/(graphql-response\+)?json\b/i.test(headers['content-type'] ?? '')) {
    // A single result: one write with its length (not chunked), so one syscall per answer.
    const buf = Buffer.from(await response.arrayBuffer());
    res.writeHead(response.status, { ...headers, 'content-length': String(buf.length) });
    return void res.end(buf);
  }
  res.writeHead(response.status, headers);
  if (!response.body) return void res.end();
  // Stream the body (SSE stays open); stop reading when the client goes away.
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  res.on('close', () => void reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await new Promise((r) => res.once('drain', r));
    }
  } catch {
    /* client went away or the stream failed */
  }
  res.end();
}
