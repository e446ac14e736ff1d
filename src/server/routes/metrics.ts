import type { Metrics } from '../metrics/metrics';
import type { Route } from '../route';

/** GET /metrics (Prometheus), when metrics are on: src/server/metrics/metrics.ts answers it. */
export function metricsRoute(metrics: Metrics): Route {
  return {
    probe: true,
    matches: (pathname) => pathname === '/metrics',
    handle: (req, res) => metrics.serve(req, res),
  };
}
