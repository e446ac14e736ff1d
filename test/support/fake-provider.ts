import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A real HTTP payment provider double on 127.0.0.1 (random port) that behaves like an idempotent provider:
 * - a payment is recorded at most once per Idempotency-Key; a repeated key with the same body gets the SAME
 *   reference back (200, `replayed: true`); a repeated key with a different body gets 422;
 * - references are its own (`prv_<random hex>`), never derived from anything the client sent;
 * - a request without Idempotency-Key gets 400 and moves nothing.
 *
 * Per-key behaviours are scripted as a queue, one consumed per request with that key (then `ok`):
 * - `ok` (`{ kind: 'ok', referenceField: 'id' }` answers with `id` instead of `reference`)
 * - `fail` / `{ kind: 'fail', status?, reason? }`: 4xx with `{ error: reason }`, nothing recorded
 * - `500` / `{ kind: 'status', status, retryAfter?, body? }`: that status, nothing recorded
 * - `stall` / `{ kind: 'stall', ms?, record? }`: records the payment (unless `record: false`, which records only
 *   once the stall elapses), holds the reply for `ms` (forever when omitted, until close), then answers normally
 * - `accept-then-drop`: records the payment, then destroys the socket without answering
 * - `no-reference`: records the payment, answers 200 without a reference (a protocol violation)
 */
type Behaviour =
  | 'ok'
  | 'fail'
  | '500'
  | 'stall'
  | 'accept-then-drop'
  | 'no-reference'
  | { kind: 'ok'; referenceField?: 'reference' | 'id' }
  | { kind: 'fail'; status?: number; reason?: string }
  | { kind: 'status'; status: number; retryAfter?: string | number; body?: unknown }
  | { kind: 'stall'; ms?: number; record?: boolean }
  | { kind: 'accept-then-drop' }
  | { kind: 'no-reference' };

interface FakeRequest {
  key: string | null;
  headers: IncomingMessage['headers'];
  body: unknown;
  raw: string;
  at: number;
}

interface FakePayment {
  reference: string;
  amount: { amountMinor: number; currency: string } | null;
  body: unknown;
}

export interface FakeProvider {
  url: string;
  /** Destroys open (including stalled) connections and stops listening; never hangs. */
  close(): Promise<void>;
  requests: FakeRequest[];
  payments: Map<string, FakePayment>;
  /** Sum of recorded payments' `amount.amountMinor` (optionally for one currency). */
  settledMinor(currency?: string): number;
  /** Appends behaviours to the key's queue. */
  script(key: string, ...behaviours: Behaviour[]): void;
  /** Requests received carrying `key`. */
  deliveries(key: string): number;
}

type Normalised = Exclude<Behaviour, string>;

function normalise(b: Behaviour): Normalised {
  switch (b) {
    case 'ok':
      return { kind: 'ok' };
    case 'fail':
      return { kind: 'fail' };
    case '500':
      return { kind: 'status', status: 500 };
    case 'stall':
      return { kind: 'stall' };
    case 'accept-then-drop':
      return { kind: 'accept-then-drop' };
    case 'no-reference':
      return { kind: 'no-reference' };
    default:
      return b;
  }
}

/** Key-sorted JSON, so a re-sent body compares equal regardless of key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function amountOf(body: unknown): FakePayment['amount'] {
  const a = (body as { amount?: unknown } | null)?.amount as { amountMinor?: unknown; currency?: unknown } | null;
  if (a && typeof a.amountMinor === 'number' && typeof a.currency === 'string') {
    return { amountMinor: a.amountMinor, currency: a.currency };
  }
  return null;
}

export async function startFakeProvider(): Promise<FakeProvider> {
  const requests: FakeRequest[] = [];
  const payments = new Map<string, FakePayment>();
  const canonicalBodies = new Map<string, string>();
  const queues = new Map<string, Normalised[]>();
  const sockets = new Set<Socket>();
  const waiters = new Set<() => void>();
  let closed = false;

  /** Resolves 'elapsed' after ms (never, when undefined) or 'closed' on close. */
  const hold = (ms: number | undefined) =>
    new Promise<'elapsed' | 'closed'>((resolve) => {
      if (closed) return resolve('closed');
      let timer: NodeJS.Timeout | undefined;
      const onClose = () => {
        if (timer) clearTimeout(timer);
        resolve('closed');
      };
      waiters.add(onClose);
      if (ms !== undefined) {
        timer = setTimeout(() => {
          waiters.delete(onClose);
          resolve('elapsed');
        }, ms);
      }
    });

  type Reply = { status: number; body: unknown; headers?: Record<string, string> };

  /** The idempotent core: record once per key, replay the same reference, refuse a changed body. */
  const accept = (key: string, body: unknown, referenceField: 'reference' | 'id' = 'reference'): Reply => {
    const canon = canonical(body);
    const existing = payments.get(key);
    if (existing) {
      if (canonicalBodies.get(key) !== canon) {
        return { status: 422, body: { error: 'Idempotency-Key reused with a different request body' } };
      }
      return { status: 200, body: { [referenceField]: existing.reference, status: 'succeeded', replayed: true } };
    }
    const reference = `prv_${randomBytes(12).toString('hex')}`;
    payments.set(key, { reference, amount: amountOf(body), body });
    canonicalBodies.set(key, canon);
    return { status: 201, body: { [referenceField]: reference, status: 'succeeded', replayed: false } };
  };

  const send = (res: ServerResponse, reply: Reply) => {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
    res.end(JSON.stringify(reply.body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const header = req.headers['idempotency-key'];
    const key = typeof header === 'string' && header.trim() !== '' ? header : null;
    let body: unknown;
    try {
      body = raw === '' ? null : JSON.parse(raw);
    } catch {
      body = undefined;
    }
    requests.push({ key, headers: req.headers, body, raw, at: Date.now() });
    if (key === null) return send(res, { status: 400, body: { error: 'missing Idempotency-Key header' } });
    if (body === undefined) return send(res, { status: 400, body: { error: 'body is not valid JSON' } });

    const queue = queues.get(key);
    const behaviour: Normalised = queue?.shift() ?? { kind: 'ok' };
    switch (behaviour.kind) {
      case 'ok':
        return send(res, accept(key, body, behaviour.referenceField));
      case 'fail':
        return send(res, { status: behaviour.status ?? 400, body: { error: behaviour.reason ?? 'scripted refusal' } });
      case 'status': {
        const headers: Record<string, string> = {};
        if (behaviour.retryAfter !== undefined) headers['retry-after'] = String(behaviour.retryAfter);
        return send(res, {
          status: behaviour.status,
          body: behaviour.body ?? { error: `scripted HTTP ${behaviour.status}` },
          headers,
        });
      }
      case 'stall': {
        const recordFirst = behaviour.record !== false;
        const early = recordFirst ? accept(key, body) : undefined;
        const r = await hold(behaviour.ms);
        if (r === 'closed') return;
        return send(res, early ?? accept(key, body));
      }
      case 'accept-then-drop':
        accept(key, body);
        res.socket?.destroy();
        return;
      case 'no-reference': {
        const reply = accept(key, body);
        return send(res, { status: reply.status === 422 ? 422 : 200, body: { status: 'accepted' } });
      }
    }
  };

  const server = createServer((req, res) => {
    res.on('error', () => {});
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => {});
    req.on('end', () => {
      void handle(req, res, Buffer.concat(chunks).toString('utf8')).catch(() => {
        if (!res.headersSent && !res.destroyed) send(res, { status: 500, body: { error: 'fake provider bug' } });
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/reversals`,
    requests,
    payments,
    settledMinor(currency?: string) {
      let sum = 0;
      for (const p of payments.values()) {
        if (p.amount && (currency === undefined || p.amount.currency === currency)) sum += p.amount.amountMinor;
      }
      return sum;
    },
    script(key: string, ...behaviours: Behaviour[]) {
      const q = queues.get(key) ?? [];
      q.push(...behaviours.map(normalise));
      queues.set(key, q);
    },
    deliveries(key: string) {
      return requests.filter((r) => r.key === key).length;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const w of waiters) w();
      waiters.clear();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await done;
    },
  };
}
