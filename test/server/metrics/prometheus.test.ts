import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorIn, engines, expectInvariants } from '../../support/engines';
import { type ApiServer, startApiServer } from '../../support/api-server';
import { dashboardQueries, expandGrafanaVariables, exportedMetricNames, selectedMetrics } from '../../support/grafana';
import { onPath, passportRetractedOverApi, scrape } from '../../support/metrics';

const HAVE = onPath('prometheus');
const WHY = HAVE ? '' : " (skipped: prometheus is not on PATH; `bash scripts/ensure-prometheus.sh` installs Debian's)";
if (!HAVE) console.warn(`test/server/metrics/prometheus.test.ts:${WHY}`);
const TOKEN = 'prometheus-scrape-token-0123456789';
// One engine is enough to prove the scrape: PostgreSQL when configured (as in CI), else PGlite.
const ENGINE = engines().includes('postgres') ? 'postgres' : 'pglite';
const DASHBOARD = 'docs/grafana/retract.json';

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/**
 * A Prometheus of the test's own (Debian's binary, a temp config and data directory, a free loopback port) scraping
 * a RETRACT server's GET /metrics every second with the scrape token, and loading docs/prometheus/alerts.yml as a
 * real server would. Killed afterwards.
 */
describe.skipIf(!HAVE)(`a real Prometheus scrapes GET /metrics on ${ENGINE}${WHY}`, () => {
  let s: ApiServer;
  let prom: ChildProcess | null = null;
  let promUrl = '';
  let dir = '';
  const log: string[] = [];

  beforeAll(async () => {
    s = await startApiServer(ENGINE, { metrics: { token: TOKEN } });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-prometheus-'));
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    fs.copyFileSync('docs/prometheus/alerts.yml', path.join(dir, 'alerts.yml'));
    fs.writeFileSync(
      path.join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [alerts.yml]',
        'scrape_configs:',
        '  - job_name: retract',
        '    scrape_interval: 1s',
        '    scrape_timeout: 1s',
        `    authorization: { type: Bearer, credentials: ${TOKEN} }`,
        `    static_configs: [{ targets: ['${new URL(s.base).host}'] }]`,
        '',
      ].join('\n'),
    );
    prom = spawn(
      'prometheus',
      [
        `--config.file=${path.join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prom.stdout!.on('data', (b: Buffer) => log.push(b.toString()));
    prom.stderr!.on('data', (b: Buffer) => log.push(b.toString()));
    for (let i = 0; ; i++) {
      if (prom.exitCode !== null) throw new Error(`prometheus exited ${prom.exitCode}:\n${log.join('')}`);
      const ready = await fetch(`${promUrl}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (i > 300) throw new Error(`prometheus not ready on ${promUrl} after 30 s:\n${log.join('')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 60_000);

  afterAll(async () => {
    if (prom && prom.exitCode === null) {
      const exited = new Promise((r) => prom!.once('exit', r));
      prom.kill('SIGTERM');
      const t = setTimeout(() => prom!.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  type Series = { metric: Record<string, string>; value: [number, string] };
  /** One query through Prometheus' HTTP API (`query` or `query_range`), its answer whatever its status. */
  async function ask(
    api: 'query' | 'query_range',
    query: string,
    extra = '',
  ): Promise<{ status: string; error?: string; data: { result: Series[] } }> {
    const r = await fetch(`${promUrl}/api/v1/${api}?query=${encodeURIComponent(query)}${extra}`);
    return (await r.json()) as { status: string; error?: string; data: { result: Series[] } };
  }

  /** One instant query's single value, or null while Prometheus has none. */
  async function value(query: string): Promise<number | null> {
    const body = await ask('query', query);
    expect(body.status).toBe('success');
    return body.data.result.length === 1 ? Number(body.data.result[0]!.value[1]) : null;
  }

  async function eventually(query: string, want: number): Promise<number | null> {
    let got: number | null = null;
    for (const until = Date.now() + 30_000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
      got = await value(query);
      if (got === want) break;
    }
    return got;
  }

  it('after the passport story and its retraction, Prometheus answers the retraction count, the owed $1,240.00 and the unreachable $89.00 (in cents)', async () => {
    expect(await eventually('up{job="retract"}', 1)).toBe(1);
    const actor = await actorIn(s.store, 'prometheus-passport');
    await passportRetractedOverApi(s.base, s.core, actor);
    expect(await eventually('sum(retract_retractions_total{job="retract"})', 1)).toBe(1);
    expect(
      await eventually('sum(retract_open_money_minor_units{job="retract",status="owed",currency="USD"})', 124_000),
    ).toBe(124_000);
    expect(
      await eventually('sum(retract_open_money_minor_units{job="retract",status="unreachable",currency="USD"})', 8_900),
    ).toBe(8_900);
    expect(
      await value('sum(retract_graphql_operations_total{job="retract",operation="RetractPassport",outcome="ok"})'),
    ).toBe(1);
    // The rules loaded, and none fires on a healthy server.
    const rules = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
      data: { groups: Array<{ rules: Array<{ name: string; state: string }> }> };
    };
    const loaded = rules.data.groups.flatMap((g) => g.rules);
    expect(loaded.map((r) => r.name)).toContain('RetractOwedReversalTooOld');
    expect(loaded.filter((r) => r.state === 'firing').map((r) => r.name)).toEqual([]);
  }, 120_000);

  // Runs after the story above, on the same Prometheus: Grafana itself is not installable here, so its queries are.
  it(`every panel query of ${DASHBOARD} parses and evaluates in Prometheus, names only metrics the server exports, and the money panels show the story's $1,240.00 owed and $89.00 unreachable`, async () => {
    const queries = dashboardQueries(DASHBOARD);
    expect(queries.length).toBeGreaterThanOrEqual(20);
    const exported = exportedMetricNames((await scrape(s.base, TOKEN)).text);
    // `up` is Prometheus' own series for the scrape of this job.
    exported.add('up');
    const problems: string[] = [];
    const results = new Map<string, Series[]>();
    const end = Math.floor(Date.now() / 1000);
    for (const q of queries) {
      const where = `${q.panel} (${q.refId}): ${q.expr}`;
      const { names, bare, unscoped } = selectedMetrics(q.expr);
      if (names.length === 0) problems.push(`${where}: selects no metric`);
      for (const n of names) if (!exported.has(n)) problems.push(`${where}: ${n} is not exported by GET /metrics`);
      for (const b of bare) problems.push(`${where}: ${b} is selected without label matchers`);
      for (const u of unscoped) problems.push(`${where}: ${u} does not select job="retract"`);
      // Grafana's $__rate_interval is at least four scrape intervals; 5m spans the whole story here.
      const expr = expandGrafanaVariables(q.expr, '5m');
      const instant = await ask('query', expr);
      if (instant.status !== 'success') problems.push(`${where}: ${instant.error}`);
      else results.set(`${q.panel}/${q.refId}`, instant.data.result);
      if (q.type === 'timeseries') {
        const range = await ask('query_range', expr, `&start=${end - 60}&end=${end}&step=5`);
        if (range.status !== 'success') problems.push(`${where} (range): ${range.error}`);
      }
      for (const n of names) {
        const stored = await ask('query', `count({__name__="${n}",job="retract"})`);
        if (stored.data.result.length === 0) problems.push(`${where}: Prometheus holds no ${n} series`);
      }
    }
    expect(problems).toEqual([]);

    const usd = (key: string) =>
      results
        .get(key)
        ?.filter((r) => r.metric.currency === 'USD')
        .map((r) => Number(r.value[1]));
    expect(usd('Owed/A')).toEqual([1240]);
    expect(usd('Unreachable/A')).toEqual([89]);
    expect(usd('Open money by status/A')).toEqual(expect.arrayContaining([1240, 89]));
    const one = (key: string) => results.get(key)!.map((r) => Number(r.value[1]));
    expect(one('Retractions and reinstatements/A')[0]).toBeGreaterThan(0);
    expect(one('Retraction duration/B')[0]).toBeGreaterThan(0);
    expect(one('Ready/A')).toEqual([1]);
    expect(one('Scrape up / database read/A')).toEqual([1]);
    expect(one('Scrape up / database read/B')).toEqual([1]);
    expect(one('Turns committed and given up/A').length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it('the lexical reading of a panel query catches a metric outside the server, a bare selector and a missing job', () => {
    expect(
      selectedMetrics('sum by (currency) (max by (fleet, currency) (x_total{job="retract",a="b"})) / 100'),
    ).toEqual({ names: ['x_total'], bare: [], unscoped: [] });
    expect(selectedMetrics('rate(y_total[5m]) + z{instance="a"}')).toEqual({
      names: ['z'],
      bare: ['y_total'],
      unscoped: ['z{instance="a"}'],
    });
  });
});
