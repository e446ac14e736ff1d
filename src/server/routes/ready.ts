import type { Store } from '../../store/engine';
import type { Drain } from '../drain';
import { readiness } from '../readiness';
import type { Route } from '../route';
import { sendJson } from '../send-json';

/** GET /ready: whether a load balancer may send traffic (src/server/readiness.ts says when). */
export function readyRoute(store: Store, drain: Drain): Route {
  return {
    probe: true,
    matches: (pathname) => pathname === '/ready',
    async handle(_req, res) {
      const r = await readiness(store, drain.draining);
      sendJson(res, r.ready ? 200 : 503, r.body);
    },
  };
}
