import { type Store, answers } from '../../store/engine';
import type { Drain } from '../drain';
import type { Route } from '../route';
import { sendJson } from '../send-json';

/** How long GET /health waits for the database's answer before saying it is unavailable. */
const PROBE_MS = 2_000;

/** GET /health: the process is up and its database answers (503 while draining or when it does not). */
export function healthRoute(store: Store, drain: Drain): Route {
  return {
    probe: true,
    matches: (pathname) => pathname === '/health',
    async handle(_req, res) {
      if (drain.draining) return sendJson(res, 503, { status: 'draining' });
      const ok = await Promise.race([
        answers(store.db),
        new Promise<boolean>((r) => setTimeout(() => r(false), PROBE_MS)),
      ]);
      sendJson(res, ok ? 200 : 503, {
        status: ok ? 'ok' : 'database unavailable',
        engine: store.engine,
        migrated: true,
      });
    },
  };
}
