// The dashboard end to end: the built page (dashboard/dist) served by the real server (createApp, PGlite in
// process; PostgreSQL with RETRACT_E2E_ENGINE=postgres and RETRACT_TEST_DATABASE_URL), driven in headless Debian
// Chromium through playwright-core. Data is seeded through the public GraphQL API only.
//
// What a user relies on, asserted here: signing in by pasting a token (and with the keyboard alone), the preview's
// blast radius / survivors / money, a retraction made on the page arriving as a live cascade over graphql-ws, the
// graph ending in the real statuses, the receipt's figures equal to the API's, the token never in the URL or the
// page source, and the feed resuming after a dropped socket without losing an event committed meanwhile.
// Screenshots go to test-artifacts/dashboard/ (git-ignored).
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { createApp, type App } from '../../src/server/app';
import { testStore, expectInvariants, type TestDb } from '../support/engines';
import {
  createAgent,
  gql,
  retract,
  seedPassportStory,
  TOTALS_SELECTION,
  type PassportSeed,
  type Totals,
  type Money,
} from './seed';

const CHROMIUM = '/usr/bin/chromium';
const HAVE_CHROMIUM = fs.existsSync(CHROMIUM);
if (!HAVE_CHROMIUM) {
  console.warn(
    `test/e2e/dashboard.test.ts skipped: ${CHROMIUM} is absent (install it with scripts/ensure-chromium.sh).`,
  );
}

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIST = path.join(ROOT, 'dashboard/dist');
const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard');
const BOOTSTRAP = 'e2e-bootstrap-token-0123456789';
const ENGINE =
  process.env.RETRACT_E2E_ENGINE === 'postgres' && process.env.RETRACT_TEST_DATABASE_URL ? 'postgres' : 'pglite';

/** Newest modification time under a path (file or directory tree). */
function newest(p: string): number {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...fs.readdirSync(p).map((f) => newest(path.join(p, f))));
}

/** Builds dashboard/dist when it is missing or older than the page's sources, so the test never runs a stale page. */
function ensureBuilt(): void {
  const index = path.join(DIST, 'index.html');
  const sources = ['dashboard/src', 'dashboard/index.html', 'dashboard/vite.config.ts'].map((p) => path.join(ROOT, p));
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= Math.max(...sources.map(newest))) return;
  const r = spawnSync('npx', ['vite', 'build', '--config', 'dashboard/vite.config.ts', '--logLevel', 'warn'], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`dashboard build failed:\n${r.stdout}\n${r.stderr}`);
}

const byTestId = (page: Page, id: string) => page.getByTestId(id);
const node = (page: Page, id: string) => page.locator(`[data-testid="graph-node"][data-id="${id}"]`);

/** A full-page picture, and with `viewport` also what the window shows (the selection column scrolls on its own). */
async function shot(page: Page, name: string, opts: { viewport?: boolean } = {}): Promise<void> {
  if (opts.viewport) await page.screenshot({ path: path.join(ARTIFACTS, `${name}-viewport.png`) });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Every amount of a money element, as the page carries it in data attributes. */
async function amounts(el: Locator): Promise<Money[]> {
  return el.locator('[data-currency]').evaluateAll((spans) =>
    spans.map((s) => ({
      amountMinor: Number((s as HTMLElement).dataset.amountMinor),
      currency: (s as HTMLElement).dataset.currency!,
    })),
  );
}

/** The money list as the receipt shows it: the API's list, with currencies seen elsewhere in the totals as zero. */
function filled(list: Money[], t: Totals): Money[] {
  const currencies = [
    ...new Set([...t.exposure, ...t.owed, ...t.unreachableAmount, ...t.settled].map((m) => m.currency)),
  ];
  return [
    ...list,
    ...currencies.filter((c) => !list.some((m) => m.currency === c)).map((currency) => ({ amountMinor: 0, currency })),
  ];
}

/** Tabs forward (at most `max` times) until the focused element matches `selector`; fails if it never does. */
async function tabTo(page: Page, selector: string, max = 40): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`keyboard focus never reached ${selector} in ${max} Tab presses`);
}

/** From now on, records when each node of the graph's list first shows each status (`id:STATUS` → ms). */
async function recordStatusTimes(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: Record<string, number> = {};
    (window as unknown as { __statusAt: Record<string, number> }).__statusAt = seen;
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target as HTMLElement;
        const key = `${el.dataset.id}:${el.dataset.status}`;
        if (el.dataset.testid === 'graph-node' && !(key in seen)) seen[key] = performance.now();
      }
    }).observe(document.getElementById('graph-node-list')!, {
      subtree: true,
      attributes: true,
      attributeFilter: ['data-status'],
    });
  });
}

const statusTimes = (page: Page) =>
  page.evaluate(() => (window as unknown as { __statusAt: Record<string, number> }).__statusAt);

async function retractionFromApi(url: string, token: string, id: string) {
  const d = await gql<{
    retraction: {
      id: string;
      totals: Totals;
      reversals: { id: string; status: string; effect: { id: string } }[];
      cancelledEffects: { id: string; status: string }[];
    };
  }>(
    url,
    token,
    `query($id: ID!) { retraction(id: $id) { id totals { ${TOTALS_SELECTION} } reversals { id status effect { id } } cancelledEffects { id status } } }`,
    { id },
  );
  return d.retraction;
}

describe.skipIf(!HAVE_CHROMIUM)(`dashboard against the real server (${ENGINE})`, () => {
  let db: TestDb;
  let app: App;
  let url: string;
  let browser: Browser;
  let token: string;
  let seed: PassportSeed;
  /** A second, unrelated story retracted while the page's socket is down. */
  let other: PassportSeed;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const requestedUrls: string[] = [];

  /** While false, the page's new WebSockets to /graphql are refused, as a network outage would (see the feed test). */
  const network = { up: true };

  async function openPage(opts: { gated?: boolean } = {}): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    contexts.push(context);
    if (opts.gated) {
      // Installed before the page loads so every socket of this page goes through it (proxied to the real server).
      await context.routeWebSocket(
        (u) => u.pathname === '/graphql',
        async (ws) => {
          if (!network.up) return ws.close({ code: 4503, reason: 'network down (test)' });
          ws.connectToServer();
        },
      );
    }
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('request', (r) => requestedUrls.push(r.url()));
    page.on('websocket', (ws) => requestedUrls.push(ws.url()));
    // The page runs under the server's strict Content-Security-Policy (src/server/edge.ts): any violation is a problem.
    await page.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) =>
        console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`),
      ),
    );
    const served = await page.goto(`${url}/dashboard/`);
    expect(served?.headers()['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    await byTestId(page, 'token-input').waitFor();
    return page;
  }

  /** Opens the passport's graph from a search; its blast radius (root first) is RETRACTED by the retraction test. */
  async function openRetractedPassport(page: Page): Promise<string[]> {
    await byTestId(page, 'search-input').fill('customer:4411/passport');
    await byTestId(page, 'search-submit').click();
    await page.locator(`[data-testid="belief-item"][data-belief-id="${seed.passport}"]`).click();
    await expect.poll(() => node(page, seed.refund).count()).toBe(1);
    const radius = [seed.passport, seed.identity, seed.refundEligible, seed.kycTier];
    for (const id of radius) expect(await node(page, id).getAttribute('data-status')).toBe('RETRACTED');
    return radius;
  }

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    ensureBuilt();
    db = await testStore(ENGINE);
    app = await createApp({
      config: { port: 0, host: '127.0.0.1', bootstrapToken: BOOTSTRAP, dashboardDir: DIST, logLevel: 'warn' },
      store: db.store,
      logger: pino({ level: 'warn' }, pino.destination(2)),
    });
    await app.listen();
    url = app.url();
    const agent = await createAgent(url, BOOTSTRAP, 'acme', 'dashboard-e2e');
    token = agent.token;
    seed = await seedPassportStory(url, token);
    other = await seedPassportStory(url, token, 'customer:7702');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
  });

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    await app?.close();
    if (db) await expectInvariants(db.store);
    await db?.close();
  });

  it('signs in and reaches a graph node with the keyboard alone; the token is in neither the URL nor the page source', async () => {
    const page = await openPage();
    // The token field has focus on load: paste (insertText is what a paste delivers) and press Enter.
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('token-input');
    await page.keyboard.insertText(token);
    await page.keyboard.press('Enter');
    await expect.poll(() => byTestId(page, 'viewer-name').textContent()).toBe('dashboard-e2e');
    expect(await byTestId(page, 'viewer-fleet').textContent()).toContain('acme');
    await expect.poll(() => byTestId(page, 'connection-status').getAttribute('data-state')).toBe('connected');
    await expect.poll(() => page.locator('[data-testid="belief-item"]').count()).toBeGreaterThanOrEqual(6);

    // Tab to the passport belief in the results, open it with Enter.
    await tabTo(page, `[data-testid="belief-item"][data-belief-id="${seed.passport}"]`);
    await page.keyboard.press('Enter');
    await expect.poll(() => node(page, seed.refund).count()).toBe(1);
    expect(await byTestId(page, 'belief-detail').getAttribute('data-id')).toBe(seed.passport);

    // Into the node list, then the arrow keys to the refund effect; Enter selects it.
    await tabTo(page, '[data-testid="graph-node"]');
    for (let i = 0; i < 20; i++) {
      if (await page.evaluate((id) => (document.activeElement as HTMLElement | null)?.dataset.id === id, seed.refund))
        break;
      await page.keyboard.press('ArrowDown');
    }
    expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.id)).toBe(seed.refund);
    await page.keyboard.press('Enter');
    await expect.poll(() => byTestId(page, 'belief-detail').getAttribute('data-id')).toBe(seed.refund);
    expect(await byTestId(page, 'belief-detail').getAttribute('data-kind')).toBe('effect');
    expect(await byTestId(page, 'belief-detail').textContent()).toContain('$1,240.00');
    expect(await node(page, seed.refund).getAttribute('aria-current')).toBe('true');
    await shot(page, '01-keyboard-node-selected');

    expect(page.url()).not.toContain(token);
    const html = await page.evaluate(() => document.documentElement.outerHTML);
    expect(html).not.toContain(token);
    expect(html).not.toContain(token.slice(3, 20));
    expect(requestedUrls.filter((u) => u.includes(token))).toEqual([]);
    // A reload keeps the session (tab storage) and still shows no token anywhere in the page.
    await page.reload();
    await expect.poll(() => byTestId(page, 'viewer-name').textContent()).toBe('dashboard-e2e');
    expect(await page.evaluate(() => document.documentElement.outerHTML)).not.toContain(token);
    expect(page.url()).not.toContain(token);
  });

  it("previews the passport retraction, retracts it on the page, plays the cascade live and shows the API's receipt", async () => {
    const page = await openPage({ gated: true });
    await shot(page, '00-sign-in');
    await byTestId(page, 'token-input').fill(token);
    await byTestId(page, 'sign-in').click();
    await expect.poll(() => byTestId(page, 'connection-status').getAttribute('data-state')).toBe('connected');
    await shot(page, '02-signed-in');

    // Search by claim key prefix, open the passport belief.
    await byTestId(page, 'search-input').fill('customer:4411/passport');
    await byTestId(page, 'search-submit').click();
    const item = page.locator(`[data-testid="belief-item"][data-belief-id="${seed.passport}"]`);
    await expect.poll(() => item.count()).toBe(1);
    expect(await item.getAttribute('data-status')).toBe('ACTIVE');
    await item.click();
    await expect.poll(() => node(page, seed.payout).count()).toBe(1);
    for (const id of [seed.passport, seed.identity, seed.refundEligible, seed.kycTier, seed.contactTrusted]) {
      expect(await node(page, id).getAttribute('data-status')).toBe('ACTIVE');
    }
    expect(await node(page, seed.refund).getAttribute('data-status')).toBe('EXECUTED');
    expect(await node(page, seed.payout).getAttribute('data-status')).toBe('PENDING');
    await shot(page, '03-graph');

    // Preview: exact blast radius, the survivor, and the money it reaches.
    await byTestId(page, 'preview-button').click();
    await byTestId(page, 'preview-panel').waitFor({ state: 'visible' });
    expect(await byTestId(page, 'preview-beliefs-count').textContent()).toBe('4');
    expect(await byTestId(page, 'preview-survivors-count').textContent()).toBe('1');
    expect(
      await byTestId(page, 'preview-survivors')
        .locator('[data-claim-key]')
        .evaluateAll((li) => li.map((l) => l.getAttribute('data-claim-key'))),
    ).toEqual(['customer:4411/contact.trusted']);
    expect(await byTestId(page, 'preview-cancel-count').textContent()).toBe('1');
    expect(await byTestId(page, 'preview-reach-count').textContent()).toBe('2');
    expect(await byTestId(page, 'preview-exposure').textContent()).toBe('$1,329.00');
    expect(await amounts(byTestId(page, 'preview-exposure'))).toEqual([{ amountMinor: 132_900, currency: 'USD' }]);
    expect(await byTestId(page, 'preview-owed').textContent()).toBe('$1,240.00');
    expect(await byTestId(page, 'preview-unreachable').textContent()).toBe('$89.00');
    const marks = Object.fromEntries(
      await page
        .locator('[data-testid="graph-node"]')
        .evaluateAll((ns) =>
          ns.map((n) => [(n as HTMLElement).dataset.id, (n as HTMLElement).dataset.preview ?? null]),
        ),
    );
    expect(marks).toMatchObject({
      [seed.passport]: 'retract',
      [seed.identity]: 'retract',
      [seed.refundEligible]: 'retract',
      [seed.kycTier]: 'retract',
      [seed.contactTrusted]: 'survivor',
      [seed.payout]: 'cancel',
      [seed.refund]: 'reach',
      [seed.charge]: 'reach',
    });
    await shot(page, '04-preview', { viewport: true });

    // Nothing changed on the server.
    const still = await gql<{ belief: { status: string } }>(
      url,
      token,
      `query($id: ID!) { belief(id: $id) { status } }`,
      { id: seed.passport },
    );
    expect(still.belief.status).toBe('ACTIVE');

    // Retract through the page, recording when each node of the list first shows its new status.
    await recordStatusTimes(page);
    await byTestId(page, 'retract-reason').fill('passport came back forged');
    await byTestId(page, 'retract-button').click();
    await byTestId(page, 'receipt').waitFor({ state: 'visible' });
    const retractionId = (await byTestId(page, 'receipt').getAttribute('data-retraction-id'))!;
    expect(retractionId).toBeTruthy();

    // The cascade arrives over graphql-ws: every step in the feed, for this retraction, in commit order.
    const steps = page.locator(`[data-testid="feed-item"][data-retraction-id="${retractionId}"]`);
    await expect
      .poll(() => steps.evaluateAll((els) => els.map((e) => e.getAttribute('data-type'))), { timeout: 10_000 })
      .toEqual([
        'RetractionCommitted',
        'ReversalRecorded',
        'ReversalRecorded',
        'EffectCancelled',
        'BeliefRetracted',
        'BeliefRetracted',
        'BeliefRetracted',
        'BeliefRetracted',
        'RetractionStarted',
      ]);

    // The graph ends in the server's statuses, played depth by depth from those events.
    const api = await retractionFromApi(url, token, retractionId);
    for (const id of [seed.passport, seed.identity, seed.refundEligible, seed.kycTier]) {
      await expect.poll(() => node(page, id).getAttribute('data-status')).toBe('RETRACTED');
    }
    await expect.poll(() => node(page, seed.payout).getAttribute('data-status')).toBe('CANCELLED');
    // Played depth by depth from the events (the page's fallback, applying the receipt, would change them all at
    // once): root, then depth 1, then depth 2, then the effects, each step at least one playback interval apart.
    const at = await statusTimes(page);
    const t = (id: string, status: string) => at[`${id}:${status}`]!;
    expect(t(seed.identity, 'RETRACTED') - t(seed.passport, 'RETRACTED')).toBeGreaterThanOrEqual(400);
    expect(Math.abs(t(seed.kycTier, 'RETRACTED') - t(seed.identity, 'RETRACTED'))).toBeLessThan(400);
    expect(t(seed.refundEligible, 'RETRACTED') - t(seed.identity, 'RETRACTED')).toBeGreaterThanOrEqual(400);
    expect(t(seed.payout, 'CANCELLED') - t(seed.refundEligible, 'RETRACTED')).toBeGreaterThanOrEqual(400);
    expect(await node(page, seed.contactTrusted).getAttribute('data-status')).toBe('ACTIVE');
    expect(await node(page, seed.addressVerified).getAttribute('data-status')).toBe('ACTIVE');
    expect(api.cancelledEffects).toEqual([{ id: seed.payout, status: 'CANCELLED' }]);
    const owed = api.reversals.find((r) => r.effect.id === seed.refund)!;
    const unreachable = api.reversals.find((r) => r.effect.id === seed.charge)!;
    expect([owed.status, unreachable.status]).toEqual(['OWED', 'UNREACHABLE']);
    await expect.poll(() => node(page, owed.id).getAttribute('data-status')).toBe('OWED');
    await expect.poll(() => node(page, unreachable.id).getAttribute('data-status')).toBe('UNREACHABLE');
    expect(await page.locator('[data-testid="graph-node"][data-kind="reversal"]').count()).toBe(2);
    expect(
      await page.locator(`[data-testid="belief-item"][data-belief-id="${seed.passport}"]`).getAttribute('data-status'),
    ).toBe('RETRACTED');

    // The receipt on the page is the API's receipt.
    const totals = api.totals;
    expect(totals.exposure).toEqual([{ amountMinor: 132_900, currency: 'USD' }]);
    const receipt = byTestId(page, 'receipt');
    await expect.poll(() => receipt.getAttribute('data-retraction-id')).toBe(api.id);
    expect(await byTestId(page, 'receipt-beliefs-retracted').textContent()).toBe(String(totals.beliefsRetracted));
    expect(await byTestId(page, 'receipt-effects-cancelled').textContent()).toBe(String(totals.effectsCancelled));
    expect(await byTestId(page, 'receipt-effects-reached').textContent()).toBe(String(totals.effectsReached));
    expect(await byTestId(page, 'receipt-reversals-owed').textContent()).toBe(String(totals.reversalsOwed));
    expect(await byTestId(page, 'receipt-unreachable-count').textContent()).toBe(String(totals.unreachable));
    expect(await amounts(byTestId(page, 'receipt-exposure'))).toEqual(filled(totals.exposure, totals));
    expect(await amounts(byTestId(page, 'receipt-owed'))).toEqual(filled(totals.owed, totals));
    expect(await amounts(byTestId(page, 'receipt-unreachable'))).toEqual(filled(totals.unreachableAmount, totals));
    expect(await amounts(byTestId(page, 'receipt-settled'))).toEqual(filled(totals.settled, totals));
    expect(await byTestId(page, 'receipt-exposure').textContent()).toBe('$1,329.00');
    expect(await byTestId(page, 'receipt-owed').textContent()).toBe('$1,240.00');
    expect(await byTestId(page, 'receipt-unreachable').textContent()).toBe('$89.00');
    expect(await byTestId(page, 'receipt-settled').textContent()).toBe('$0.00');
    // Refreshing reads the receipt again from the server and shows the same figures.
    await byTestId(page, 'receipt-refresh').click();
    await expect.poll(() => byTestId(page, 'receipt-exposure').textContent()).toBe('$1,329.00');
    expect(await byTestId(page, 'error-banner').isVisible()).toBe(false);
    await page.waitForTimeout(1_000); // let the last flash of the cascade fade before the picture
    await shot(page, '05-retracted', { viewport: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1440); // no sideways scroll
  });

  it('resumes the feed after a dropped socket without losing an event committed while it was down', async () => {
    const page = contexts[1]!.pages()[0]!;
    const feedItems = page.locator('[data-testid="feed-item"]');
    const before = await feedItems.count();
    const lastCursor = await page.evaluate(() =>
      (window as unknown as { __retractDashboard: { lastCursor(): string | null } }).__retractDashboard.lastCursor(),
    );
    expect(lastCursor).toBeTruthy();
    const reconnects = Number(await byTestId(page, 'connection-status').getAttribute('data-reconnects'));

    // Hold the network down: new sockets are refused until it comes back, then proxied to the real server.
    network.up = false;
    await page.evaluate(() =>
      (window as unknown as { __retractDashboard: { dropConnection(): void } }).__retractDashboard.dropConnection(),
    );
    await expect.poll(() => byTestId(page, 'connection-status').getAttribute('data-state')).toBe('reconnecting');

    const missed = await retract(url, token, other.passport, 'committed while the dashboard was offline');
    await page.waitForTimeout(300);
    expect(await byTestId(page, 'connection-status').getAttribute('data-state')).not.toBe('connected');
    expect(await page.locator(`[data-testid="feed-item"][data-retraction-id="${missed.id}"]`).count()).toBe(0);

    network.up = true;
    await expect
      .poll(() => byTestId(page, 'connection-status').getAttribute('data-state'), { timeout: 15_000 })
      .toBe('connected');
    expect(Number(await byTestId(page, 'connection-status').getAttribute('data-reconnects'))).toBeGreaterThan(
      reconnects,
    );
    const resumed = page.locator(`[data-testid="feed-item"][data-retraction-id="${missed.id}"]`);
    await expect
      .poll(() => resumed.evaluateAll((els) => els.map((e) => e.getAttribute('data-type'))), { timeout: 10_000 })
      .toEqual([
        'RetractionCommitted',
        'ReversalRecorded',
        'ReversalRecorded',
        'EffectCancelled',
        'BeliefRetracted',
        'BeliefRetracted',
        'BeliefRetracted',
        'BeliefRetracted',
        'RetractionStarted',
      ]);
    expect(missed.totals.beliefsRetracted).toBe(4);

    // Nothing twice, nothing before the drop lost or repeated.
    const cursors = await feedItems.evaluateAll((els) => els.map((e) => e.getAttribute('data-cursor')));
    expect(new Set(cursors).size).toBe(cursors.length);
    expect(cursors.length).toBe(before + 9);
    expect(await byTestId(page, 'feed').getAttribute('data-last-cursor')).toBe(cursors[0]);
    await shot(page, '06-feed-resumed');
    // The same page at a narrow width (one column), for the layout review.
    await page.setViewportSize({ width: 820, height: 1000 });
    await page.waitForTimeout(300);
    await shot(page, '07-narrow');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(820);
  });

  it("shows the fleet's history and open money at sign-in, and the time slider redraws the graph as of a past instant", async () => {
    const api = await gql<{
      retractions: { totalCount: number; edges: { node: { id: string; createdAt: string; totals: Totals } }[] };
      openMoney: { owed: Money[]; owedCount: number; inFlight: Money[]; reexecutionOwed: Money[] };
    }>(
      url,
      token,
      `{ retractions(first: 20) { totalCount edges { node { id createdAt totals { ${TOTALS_SELECTION} } } } } openMoney { owedCount owed { amountMinor currency } inFlight { amountMinor currency } reexecutionOwed { amountMinor currency } } }`,
    );
    expect(api.retractions.totalCount).toBe(2);
    const page = await openPage();
    await byTestId(page, 'token-input').fill(token);
    await byTestId(page, 'sign-in').click();
    // Before any event arrives, the history lists the fleet's receipts with the API's totals, newest first.
    const items = page.locator('[data-testid="history-item"]');
    await expect
      .poll(() => items.evaluateAll((els) => els.map((e) => e.getAttribute('data-retraction-id'))))
      .toEqual(api.retractions.edges.map((e) => e.node.id));
    for (const [i, e] of api.retractions.edges.entries()) {
      expect(await amounts(items.nth(i).getByTestId('history-owed'))).toEqual(e.node.totals.owed);
      expect(await items.nth(i).getByTestId('history-totals').textContent()).toContain(
        `${e.node.totals.beliefsRetracted} beliefs`,
      );
    }
    expect(await amounts(byTestId(page, 'open-money-owed'))).toEqual(api.openMoney.owed);
    expect(await byTestId(page, 'open-money-owed').textContent()).toBe('$2,480.00');
    expect(await byTestId(page, 'open-money-owed-count').textContent()).toBe(` (${api.openMoney.owedCount})`);
    expect(await amounts(byTestId(page, 'open-money-in-flight'))).toEqual(api.openMoney.inFlight);
    expect(await amounts(byTestId(page, 'open-money-reexecution'))).toEqual(api.openMoney.reexecutionOwed);

    // Open the (retracted) passport; slide to just before its retraction: the blast radius stands again.
    const radius = await openRetractedPassport(page);
    const first = api.retractions.edges[api.retractions.edges.length - 1]!.node; // the oldest: the passport retraction made on the page
    const slide = (value: string) =>
      byTestId(page, 'as-of').evaluate((i, v) => {
        (i as HTMLInputElement).value = v;
        i.dispatchEvent(new Event('input', { bubbles: true }));
      }, value);
    await slide(String(new Date(first.createdAt).getTime() - 1));
    for (const id of radius) await expect.poll(() => node(page, id).getAttribute('data-status')).toBe('ACTIVE');
    expect(await byTestId(page, 'as-of-label').getAttribute('data-as-of')).toBe(
      new Date(new Date(first.createdAt).getTime() - 1).toISOString(),
    );
    await shot(page, '08-as-of-before-retraction', { viewport: true });
    // At the retraction's own instant it has happened.
    await slide(String(new Date(first.createdAt).getTime()));
    for (const id of radius) await expect.poll(() => node(page, id).getAttribute('data-status')).toBe('RETRACTED');
    // Before the story was told, none of it was asserted yet.
    await slide((await byTestId(page, 'as-of').getAttribute('min')) as string);
    for (const id of radius) await expect.poll(() => node(page, id).getAttribute('data-status')).toBe('NOT_YET');
    await byTestId(page, 'as-of-now').click();
    for (const id of radius) await expect.poll(() => node(page, id).getAttribute('data-status')).toBe('RETRACTED');
    expect(await byTestId(page, 'as-of-label').textContent()).toBe('now');

    // A retraction committed now arrives in the history and the money without a reload.
    const third = await seedPassportStory(url, token, 'customer:9903');
    const r3 = await retract(url, token, third.passport, 'a third one, while the page is open');
    await expect.poll(() => items.first().getAttribute('data-retraction-id'), { timeout: 10_000 }).toBe(r3.id);
    await expect.poll(() => byTestId(page, 'open-money-owed').textContent()).toBe('$3,720.00');
    expect(await byTestId(page, 'error-banner').isVisible()).toBe(false);
  });

  it('reinstates the passport retraction from its receipt: the cascade runs back root first, level by level, and the receipt names the money voided', async () => {
    const { belief } = await gql<{ belief: { retraction: { id: string } } }>(
      url,
      token,
      `query($id: ID!) { belief(id: $id) { retraction { id } } }`,
      { id: seed.passport },
    );
    const retractionId = belief.retraction.id;
    const page = await openPage();
    await byTestId(page, 'token-input').fill(token);
    await byTestId(page, 'sign-in').click();
    await expect.poll(() => byTestId(page, 'connection-status').getAttribute('data-state')).toBe('connected');
    const radius = await openRetractedPassport(page);
    await recordStatusTimes(page);

    // The retraction's receipt, opened from the history, carries the form that takes it back.
    await page
      .locator(`[data-testid="history-item"][data-kind="retraction"][data-retraction-id="${retractionId}"] button`)
      .click();
    await expect.poll(() => byTestId(page, 'receipt').getAttribute('data-retraction-id')).toBe(retractionId);
    await byTestId(page, 'reinstate-button').click();
    expect(await byTestId(page, 'reinstate-note').textContent()).toContain('A reason is required');
    await byTestId(page, 'reinstate-reason').fill('the passport was genuine after all');
    await byTestId(page, 'reinstate-button').click();
    await expect.poll(() => byTestId(page, 'receipt').getAttribute('data-kind')).toBe('reinstatement');
    const reinstatementId = (await byTestId(page, 'receipt').getAttribute('data-reinstatement-id'))!;

    // Every step arrives over graphql-ws in commit order: the beliefs back, then the reversals voided.
    const steps = page.locator(`[data-testid="feed-item"][data-retraction-id="${retractionId}"]`);
    await expect
      .poll(
        () =>
          steps.evaluateAll((els) =>
            els
              .map((e) => e.getAttribute('data-type'))
              .filter(
                (t) =>
                  !t!.startsWith('Retraction') &&
                  t !== 'BeliefRetracted' &&
                  t !== 'EffectCancelled' &&
                  t !== 'ReversalRecorded',
              ),
          ),
        { timeout: 10_000 },
      )
      .toEqual([
        'ReinstatementCommitted',
        'ReversalVoided',
        'ReversalVoided',
        'BeliefReinstated',
        'BeliefReinstated',
        'BeliefReinstated',
        'BeliefReinstated',
        'ReinstatementStarted',
      ]);
    for (const id of radius) await expect.poll(() => node(page, id).getAttribute('data-status')).toBe('ACTIVE');
    // The cascade running back: the root first, then its level-1 dependents together, then refund-eligible (which
    // needed both), each level at least one playback interval after the last; the voided reversals after them.
    const at = await statusTimes(page);
    const t = (id: string, status: string) => at[`${id}:${status}`]!;
    expect(t(seed.identity, 'ACTIVE') - t(seed.passport, 'ACTIVE')).toBeGreaterThanOrEqual(400);
    expect(Math.abs(t(seed.kycTier, 'ACTIVE') - t(seed.identity, 'ACTIVE'))).toBeLessThan(400);
    expect(t(seed.refundEligible, 'ACTIVE') - t(seed.identity, 'ACTIVE')).toBeGreaterThanOrEqual(400);
    const api = await gql<{
      reinstatement: {
        status: string;
        totals: { beliefsReinstated: number; effectsRestorable: number; voided: Money[]; reexecutionOwed: Money[] };
        moneyLines: { line: string; amount: Money; reversal: { id: string } }[];
      };
    }>(
      url,
      token,
      `query($id: ID!) { reinstatement(id: $id) { status totals { beliefsReinstated effectsRestorable voided { amountMinor currency } reexecutionOwed { amountMinor currency } } moneyLines { line amount { amountMinor currency } reversal { id } } } }`,
      { id: reinstatementId },
    );
    const r = api.reinstatement;
    expect(r.status).toBe('REINSTATED');
    for (const l of r.moneyLines)
      await expect.poll(() => node(page, l.reversal.id).getAttribute('data-status')).toBe('VOIDED');
    const voidedAt = await statusTimes(page);
    for (const l of r.moneyLines)
      expect(voidedAt[`${l.reversal.id}:VOIDED`]! - t(seed.refundEligible, 'ACTIVE')).toBeGreaterThanOrEqual(400);

    // The receipt on the page is the API's: $1,240.00 (the refund's reversal, never sent) and $89.00 (unreachable)
    // no longer need to move, nothing is owed again, and the cancelled payout can be restored.
    expect(r.moneyLines.map((l) => [l.line, l.amount.amountMinor]).sort()).toEqual([
      ['VOIDED', 124_000],
      ['VOIDED', 8_900],
    ]);
    expect(await byTestId(page, 'reinstatement-beliefs').textContent()).toBe(String(r.totals.beliefsReinstated));
    expect(r.totals.beliefsReinstated).toBe(4);
    expect(await amounts(byTestId(page, 'reinstatement-voided'))).toEqual(r.totals.voided);
    expect(await byTestId(page, 'reinstatement-voided').textContent()).toBe('$1,329.00');
    expect(await byTestId(page, 'reinstatement-reexecution').textContent()).toBe('$0.00');
    expect(await byTestId(page, 'reinstatement-restorable-count').textContent()).toBe('1');
    expect(await byTestId(page, 'reinstatement-lines').locator('li[data-line="VOIDED"]').count()).toBe(2);
    // The history lists it above the retraction it took back.
    const first = page.locator('[data-testid="history-item"]').first();
    await expect.poll(() => first.getAttribute('data-reinstatement-id'), { timeout: 10_000 }).toBe(reinstatementId);
    expect(await first.getByTestId('history-voided').textContent()).toBe('$1,329.00');
    expect(await byTestId(page, 'error-banner').isVisible()).toBe(false);
    await page.waitForTimeout(1_000);
    await shot(page, '09-reinstated', { viewport: true });
  });

  it("a reinstatement that finds its root's claim taken again says BLOCKED, with the contradiction it raised, and brings nothing back", async () => {
    const { belief } = await gql<{ belief: { retraction: { id: string } } }>(
      url,
      token,
      `query($id: ID!) { belief(id: $id) { retraction { id } } }`,
      { id: other.passport },
    );
    // Since the retraction, another agent wrote the claim anew: the root cannot simply come back.
    await gql(url, token, `mutation($input: AssertBeliefInput!) { assertBelief(input: $input) { __typename } }`, {
      input: {
        claimKey: 'customer:7702/passport.authentic',
        statement: 'The passport of customer 7702 was re-checked: forged',
        value: false,
      },
    });
    const page = await openPage();
    await byTestId(page, 'token-input').fill(token);
    await byTestId(page, 'sign-in').click();
    await page
      .locator(
        `[data-testid="history-item"][data-kind="retraction"][data-retraction-id="${belief.retraction.id}"] button`,
      )
      .click();
    await byTestId(page, 'reinstate-reason').fill('the first check was right after all');
    await byTestId(page, 'reinstate-button').click();
    await expect.poll(() => byTestId(page, 'reinstate-note').getAttribute('data-blocked')).toBe('true');
    const note = await byTestId(page, 'reinstate-note').textContent();
    expect(note).toContain('Blocked: customer:7702/passport.authentic holds another ACTIVE belief');
    const api = await gql<{
      reinstatements: {
        edges: { node: { status: string; retraction: { id: string }; contradiction: { id: string } | null } }[];
      };
      belief: { status: string };
    }>(
      url,
      token,
      `query($id: ID!) { reinstatements(first: 5) { edges { node { status retraction { id } contradiction { id } } } } belief(id: $id) { status } }`,
      { id: other.passport },
    );
    const blocked = api.reinstatements.edges.find((e) => e.node.retraction.id === belief.retraction.id)!.node;
    expect(blocked.status).toBe('BLOCKED');
    expect(note).toContain(`Contradiction ${blocked.contradiction!.id} was raised`);
    expect(api.belief.status).toBe('RETRACTED');
    expect(await byTestId(page, 'receipt').getAttribute('data-kind')).toBe('retraction');
  });

  it('a read-only token sees the graph and the preview (effects and money withheld), but neither the retract form nor a feed that retries forever', async () => {
    const reader = await createAgent(url, BOOTSTRAP, 'acme', 'dashboard-reader', ['beliefs:read']);
    const page = await openPage();
    await byTestId(page, 'token-input').fill(reader.token);
    await byTestId(page, 'sign-in').click();
    await expect.poll(() => byTestId(page, 'viewer-name').textContent()).toBe('dashboard-reader');
    await expect.poll(() => byTestId(page, 'connection-status').getAttribute('data-state')).toBe('unauthorized');
    const item = page.locator(`[data-testid="belief-item"][data-belief-id="${other.addressVerified}"]`);
    await expect.poll(() => item.count()).toBe(1);
    await item.click();
    await expect.poll(() => byTestId(page, 'belief-detail').getAttribute('data-id')).toBe(other.addressVerified);
    expect(await byTestId(page, 'preview-button').isEnabled()).toBe(true);
    // The preview shows what beliefs:read opens; effects and money are marked withheld (the server refuses them), not an error.
    await byTestId(page, 'preview-button').click();
    await byTestId(page, 'preview-panel').waitFor({ state: 'visible' });
    expect(Number(await byTestId(page, 'preview-beliefs-count').textContent())).toBeGreaterThan(0);
    expect(await byTestId(page, 'preview-exposure').getAttribute('data-withheld')).toBe('true');
    expect(await byTestId(page, 'preview-cancel-count').getAttribute('data-withheld')).toBe('true');
    expect(await page.locator('#retract-form').isVisible()).toBe(false);
    expect(await byTestId(page, 'retract-button').isVisible()).toBe(false);
    await page.waitForTimeout(1_500);
    expect(await byTestId(page, 'connection-status').getAttribute('data-state')).toBe('unauthorized');
    expect(await byTestId(page, 'connection-status').getAttribute('data-reconnects')).toBe('0');
    expect(await byTestId(page, 'error-banner').isVisible()).toBe(false);
    expect(problems).toEqual([]);
  });
});
