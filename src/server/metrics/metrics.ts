import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { Plugin } from 'graphql-yoga';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Store } from '../../store/engine';
import { useMetrics } from './graphql';
import { registerOpenMoneyMetrics } from './open-money';
import { registerProcessMetrics } from './process';
import type { MetricsSettings } from './settings';

export interface Metrics {
  /** The Yoga plugin that counts and times GraphQL operations. */
  readonly plugin: Plugin;
  /** Answers GET /metrics (Prometheus text format), checking the scrape token when one is set. */
  serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
  close(): void;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * GET /metrics for one app: its own registry, so two apps in one process (tests) never mix their figures. `ready` is
 * what GET /ready would answer, asked at scrape time: a dashboard shows readiness (draining included) from the same
 * scrape, without a blackbox prober beside it.
 */
export function createMetrics(store: Store, settings: MetricsSettings, ready: () => Promise<boolean>): Metrics {
  const registry = new Registry();
  new Gauge({
    name: 'retract_ready',
    help: '1 when GET /ready would answer 200 (the database answers, migrations are current, not draining), else 0.',
    registers: [registry],
    async collect() {
      this.set((await ready()) ? 1 : 0);
    },
  });
  const plugin = useMetrics(registry, settings.maxOperations);
  const stop = registerProcessMetrics(registry, store);
  const open = registerOpenMoneyMetrics(registry, store, settings.fleetLabel);
  const expected = settings.token ? digest(settings.token) : null;
  let defaults = false;
  return {
    plugin,
    async serve(req, res) {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
        return void res.end('GET /metrics\n');
      }
      if (expected) {
        const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
        if (!m || !timingSafeEqual(digest(m[1]!), expected)) {
          res.writeHead(401, {
            'www-authenticate': 'Bearer realm="metrics"',
            'content-type': 'text/plain; charset=utf-8',
          });
          return void res.end('/metrics needs Authorization: Bearer <RETRACT_METRICS_TOKEN>\n');
        }
      }
      // Node's process metrics from the first scrape on: a server nobody scrapes pays nothing for them.
      if (!defaults) collectDefaultMetrics({ register: registry });
      defaults = true;
      await open.refresh();
      const body = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    },
    close: stop,
  };
}
