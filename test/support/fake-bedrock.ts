/**
 * A real local server that speaks the Bedrock Runtime REST wire format, for driving the real SDK client
 * in tests (endpoint override, static fake credentials). No mocking of the client.
 *
 * - Listens on 127.0.0.1, random port, and serves HTTP/1.1 and cleartext HTTP/2 (prior knowledge) on the
 *   same port: the Bedrock Runtime client's default Node handler speaks HTTP/2.
 * - `POST /model/{modelId}/invoke`: Titan embeddings (`{inputText, dimensions, normalize}` in,
 *   `{embedding, inputTextTokenCount}` out); the embedding is deterministic from the text (LocalEmbedder).
 * - `POST /model/{modelId}/converse`: Converse request in; `{output:{message}, stopReason, usage, metrics}` out.
 * - Requires an Authorization header (any SigV4 or Bearer value is accepted) and records it.
 * - Scriptable per call (FIFO queue of behaviours, then a default); records every request.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { LocalEmbedder } from '../../src/embedding/local';

/** What the fake does with one request. */
type FakeBehaviour =
  /** Answer normally (Titan: deterministic embedding; Converse: the default reply text). */
  | { kind: 'ok' }
  /** 429 with `x-amzn-ErrorType: ThrottlingException` and a JSON error body. */
  | { kind: 'throttle'; message?: string }
  /** Any error status; `errorType` defaults from the status (500 InternalServerException, 503 ServiceUnavailableException…). */
  | { kind: 'error'; status: number; errorType?: string; message?: string }
  /** Never answer (until the client gives up or the server closes). */
  | { kind: 'stall' }
  /** Answer after `ms` milliseconds, then behave as `then` (default `ok`). */
  | { kind: 'delay'; ms: number; then?: FakeBehaviour }
  /** 200 with a body that is not valid JSON. */
  | { kind: 'malformed'; body?: string }
  /** 200 Titan reply with exactly this embedding. */
  | { kind: 'embedding'; vector: unknown[] }
  /** 200 Titan reply whose embedding has `dims` entries (for dimension-mismatch tests). */
  | { kind: 'wrongDims'; dims: number }
  /** 200 Converse reply with this assistant text and stopReason (default `end_turn`). */
  | { kind: 'converse'; text: string; stopReason?: string }
  /** Exactly this response. */
  | { kind: 'raw'; status: number; headers?: Record<string, string>; body: string };

/** A behaviour chosen by looking at the request. */
type FakeHandler = (call: RecordedCall) => FakeBehaviour;

/** One request as the fake received it. */
interface RecordedCall {
  /** 1-based arrival order. */
  seq: number;
  method: string;
  /** Raw request path, still percent-encoded (`/model/amazon.titan-embed-text-v2%3A0/invoke`). */
  path: string;
  operation: 'invoke' | 'converse' | 'other';
  /** Decoded model id from the path, or null. */
  modelId: string | null;
  /** Lower-cased header names, pseudo-headers removed. */
  headers: Record<string, string>;
  /** The Authorization header value, if one was sent. */
  authorization: string | null;
  /** True when the Authorization header is a SigV4 signature. */
  sigv4: boolean;
  /** Parsed JSON body, or null when the body was not JSON. */
  body: unknown;
  rawBody: string;
  httpVersion: string;
  /** The behaviour the fake applied. */
  behaviour: FakeBehaviour['kind'];
}

export interface FakeBedrock {
  /** Base URL to pass as the client's `endpoint`, e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Every request received, in order. */
  calls: RecordedCall[];
  /** Appends behaviours to the queue; each request takes the next one, then falls back to the default. */
  script(...behaviours: Array<FakeBehaviour | FakeHandler>): void;
  /** Behaviour once the queue is empty (initially `ok`). */
  setDefault(b: FakeBehaviour | FakeHandler): void;
  /** Text of the Converse reply under `ok`. */
  setDefaultReply(text: string): void;
  /** Clears the queue, the recorded calls and the defaults. */
  reset(): void;
  /** Closes the server and every open connection; pending (stalled/delayed) requests are dropped. */
  close(): Promise<void>;
}

const DEFAULT_ERROR_TYPES: Record<number, string> = {
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

const DEFAULT_REPLY = '{"verdict":"ESCALATE","rationale":"fake default reply"}';
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** Starts a fake Bedrock Runtime on 127.0.0.1 with a random port. Always `close()` it. */
export async function startFakeBedrock(): Promise<FakeBedrock> {
  const local = new LocalEmbedder();
  const calls: RecordedCall[] = [];
  let queue: Array<FakeBehaviour | FakeHandler> = [];
  let fallback: FakeBehaviour | FakeHandler = { kind: 'ok' };
  let defaultReply = DEFAULT_REPLY;
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  let closed = false;

  const send = (res: Res, status: number, body: string, headers: Record<string, string> = {}) => {
    if (closed || res.writableEnded || (res as { destroyed?: boolean }).destroyed) return;
    const all: Record<string, string> = {
      'content-type': 'application/json',
      'x-amzn-requestid': randomUUID(),
      ...Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
    };
    try {
      (res as http.ServerResponse).writeHead(status, all);
      res.end(body);
    } catch {
      // the client went away (aborted stream); nothing to answer
    }
  };

  const sendError = (res: Res, status: number, errorType: string, message: string) =>
    send(res, status, JSON.stringify({ message }), {
      'x-amzn-errortype': `${errorType}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    });

  const titanReply = (call: RecordedCall): { status: number; body: string; errorType?: string } => {
    const b = call.body as { inputText?: unknown; dimensions?: unknown; normalize?: unknown } | null;
    if (!b || typeof b.inputText !== 'string' || b.inputText.length === 0) {
      return {
        status: 400,
        errorType: 'ValidationException',
        body: 'Malformed input request: inputText is required, please reformat your input and try again.',
      };
    }
    const dims = b.dimensions === undefined ? 1024 : b.dimensions;
    if (dims !== 256 && dims !== 512 && dims !== 1024) {
      return {
        status: 400,
        errorType: 'ValidationException',
        body: `Malformed input request: dimensions ${String(dims)} is not one of 256, 512, 1024`,
      };
    }
    const base = local.embedOne(b.inputText);
    let v = Array.from({ length: dims }, (_, i) => base[i % base.length]!);
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    const scale = b.normalize === false ? 1 + (b.inputText.length % 7) : 1 / norm;
    v = v.map((x) => x * scale);
    return {
      status: 200,
      body: JSON.stringify({ embedding: v, inputTextTokenCount: b.inputText.split(/\s+/).filter(Boolean).length }),
    };
  };

  const converseReply = (text: string, stopReason: string) => {
    const outputTokens = Math.max(1, Math.ceil(text.length / 4));
    return JSON.stringify({
      output: { message: { role: 'assistant', content: [{ text }] } },
      stopReason,
      usage: { inputTokens: 100, outputTokens, totalTokens: 100 + outputTokens },
      metrics: { latencyMs: 7 },
    });
  };

  const apply = (b: FakeBehaviour, call: RecordedCall, res: Res): void => {
    switch (b.kind) {
      case 'ok': {
        if (call.operation === 'invoke') {
          const r = titanReply(call);
          if (r.status !== 200) return sendError(res, r.status, r.errorType!, r.body);
          return send(res, 200, r.body);
        }
        const msgs = (call.body as { messages?: unknown } | null)?.messages;
        if (!Array.isArray(msgs)) return sendError(res, 400, 'ValidationException', 'messages is required');
        return send(res, 200, converseReply(defaultReply, 'end_turn'));
      }
      case 'throttle':
        return sendError(
          res,
          429,
          'ThrottlingException',
          b.message ?? 'Too many requests, please wait before trying again.',
        );
      case 'error':
        return sendError(
          res,
          b.status,
          b.errorType ?? DEFAULT_ERROR_TYPES[b.status] ?? 'InternalServerException',
          b.message ?? `fake error ${b.status}`,
        );
      case 'stall':
        return;
      case 'delay': {
        const t = setTimeout(() => {
          timers.delete(t);
          apply(b.then ?? { kind: 'ok' }, call, res);
        }, b.ms);
        timers.add(t);
        return;
      }
      case 'malformed':
        return send(res, 200, b.body ?? '{"embedding": [0.1, 0.2, ');
      case 'embedding':
        return send(res, 200, JSON.stringify({ embedding: b.vector, inputTextTokenCount: 1 }));
      case 'wrongDims': {
        const v = Array.from({ length: b.dims }, () => 1 / Math.sqrt(Math.max(1, b.dims)));
        return send(res, 200, JSON.stringify({ embedding: v, inputTextTokenCount: 1 }));
      }
      case 'converse':
        return send(res, 200, converseReply(b.text, b.stopReason ?? 'end_turn'));
      case 'raw':
        return send(res, b.status, b.body, b.headers);
    }
  };

  const onRequest = (req: Req, res: Res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = rawBody ? JSON.parse(rawBody) : null;
      } catch {
        body = null;
      }
      const path = req.url ?? '/';
      const m = /^\/model\/([^/]+)\/(invoke|converse)$/.exec(path.split('?')[0]!);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) {
        if (!k.startsWith(':') && v !== undefined)
          headers[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : String(v);
      }
      const authorization = headers.authorization ?? null;
      const call: RecordedCall = {
        seq: calls.length + 1,
        method: req.method ?? 'GET',
        path,
        operation: m ? (m[2] as 'invoke' | 'converse') : 'other',
        modelId: m ? decodeURIComponent(m[1]!) : null,
        headers,
        authorization,
        sigv4: authorization?.startsWith('AWS4-HMAC-SHA256 ') ?? false,
        body,
        rawBody,
        httpVersion: req.httpVersion,
        behaviour: 'ok',
      };
      calls.push(call);
      if (!authorization) {
        call.behaviour = 'error';
        return sendError(res, 403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
      }
      if (req.method !== 'POST' || !m) {
        call.behaviour = 'error';
        return sendError(res, 404, 'UnknownOperationException', `no such operation: ${req.method} ${path}`);
      }
      const next = queue.shift() ?? fallback;
      const b = typeof next === 'function' ? next(call) : next;
      call.behaviour = b.kind;
      apply(b, call, res);
    });
  };

  const h1 = http.createServer(onRequest);
  const h2 = http2.createServer(onRequest);
  h2.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });

  // One port, two protocols: look at the first bytes for the HTTP/2 connection preface.
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const isPrefacePrefix = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (isPrefacePrefix && seen.length < H2_PREFACE.length) return; // need more bytes to decide
      socket.off('data', onData);
      socket.pause();
      socket.unshift(seen);
      // HTTP/2 drains the already-read bytes itself (socket.readableLength) when it takes the socket over;
      // resuming here would discard them. HTTP/1.1 reads through the stream and needs it flowing again.
      if (isPrefacePrefix) {
        h2.emit('connection', socket);
      } else {
        h1.emit('connection', socket);
        socket.resume();
      }
    };
    socket.on('data', onData);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    script: (...bs) => {
      queue.push(...bs);
    },
    setDefault: (b) => {
      fallback = b;
    },
    setDefaultReply: (text) => {
      defaultReply = text;
    },
    reset: () => {
      queue = [];
      calls.length = 0;
      fallback = { kind: 'ok' };
      defaultReply = DEFAULT_REPLY;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
      h1.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
