import fs from 'node:fs';
import path from 'node:path';
import type { App } from './app';
import { graphiqlOn } from './config';

/** The start-up line's fields: where each door is, and whether an operator token is set (never the token). */
export interface Announcement {
  url: string;
  graphql: string;
  graphiql: string | null;
  dashboard: string;
  mcp: string;
  health: string;
  ready: string;
  operatorToken: 'configured' | 'not configured';
  /** The server's process id: what a supervisor signals (npm start's own pid is npm's). */
  pid: number;
}

/**
 * Logs, once the server listens, one line a person can read and a program can parse: the GraphQL,
 * GraphiQL (when on), dashboard and MCP URLs, and whether RETRACT_BOOTSTRAP_TOKEN is set. `url` stays
 * the GraphQL URL, as scripts that wait for the server read it.
 */
export function announce(app: App): Announcement {
  const base = app.url();
  const graphql = `${base}/graphql`;
  const built = fs.existsSync(path.join(path.resolve(app.config.dashboardDir), 'index.html'));
  const a: Announcement = {
    url: graphql,
    graphql,
    graphiql: graphiqlOn(app.config) ? graphql : null,
    dashboard: `${base}/dashboard/`,
    mcp: `${base}/mcp`,
    health: `${base}/health`,
    ready: `${base}/ready`,
    operatorToken: app.config.bootstrapToken ? 'configured' : 'not configured',
    pid: process.pid,
  };
  const token = app.config.bootstrapToken
    ? 'operator token configured (RETRACT_BOOTSTRAP_TOKEN)'
    : 'no operator token: set RETRACT_BOOTSTRAP_TOKEN (16+ characters) to make agents through the API';
  const msg = [
    `RETRACT serving GraphQL at ${graphql}`,
    a.graphiql ? `GraphiQL at ${a.graphiql} (in a browser)` : 'GraphiQL off (RETRACT_GRAPHIQL=on)',
    `dashboard at ${a.dashboard}${built ? '' : ' (not built: npm run build)'}`,
    `MCP at ${a.mcp}`,
    token,
  ].join('; ');
  app.log.info({ ...a, engine: app.store.engine, store: app.store.description }, msg);
  return a;
}
