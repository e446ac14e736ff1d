// GraphiQL served by the server itself: in headless Debian Chromium (playwright-core) with every request that
// leaves loopback aborted, as on a machine with no network, it loads, takes a token pasted after the prefilled
// "Bearer " and runs a query, and has the schema for its documentation explorer. Outside development it is off
// unless RETRACT_GRAPHIQL=on.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Locator } from 'playwright-core';
import { configFromEnv, graphiqlOn } from '../../src/server/config';
import { ConfigError } from '../../src/kernel/config-error';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';
import { expectInvariants } from '../support/engines';

const CHROMIUM = '/usr/bin/chromium';
const HAVE_CHROMIUM = fs.existsSync(CHROMIUM);
if (!HAVE_CHROMIUM)
  console.warn(
    `test/server/graphiql.test.ts: the browser test is skipped: ${CHROMIUM} is absent (scripts/ensure-chromium.sh installs it).`,
  );

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** What an editor shows, with Monaco's non-breaking spaces as spaces. */
const shown = async (l: Locator) => (await l.innerText()).replace(/\u00a0/g, ' ');

describe('RETRACT_GRAPHIQL', () => {
  it('is on by default in development, off in production, and on or off when set; any other value is refused in one line', () => {
    expect(graphiqlOn(configFromEnv({}))).toBe(true);
    expect(graphiqlOn(configFromEnv({ NODE_ENV: 'production' }))).toBe(false);
    expect(graphiqlOn(configFromEnv({ NODE_ENV: 'production', RETRACT_GRAPHIQL: 'on' }))).toBe(true);
    expect(graphiqlOn(configFromEnv({ RETRACT_GRAPHIQL: 'OFF' }))).toBe(false);
    expect(() => configFromEnv({ RETRACT_GRAPHIQL: 'yes' })).toThrow(ConfigError);
    expect(() => configFromEnv({ RETRACT_GRAPHIQL: 'yes' })).toThrow('RETRACT_GRAPHIQL must be on or off (got yes)');
  });
});

describe('GraphiQL from the server itself', () => {
  let dev: ApiServer;
  let prod: ApiServer;
  let prodOn: ApiServer;
  beforeAll(async () => {
    dev = await startApiServer('pglite');
    prod = await startApiServer('pglite', { db: dev.db, config: { production: true } });
    prodOn = await startApiServer('pglite', { db: dev.db, config: { production: true, graphiql: true } });
  });
  afterAll(async () => {
    await prodOn?.close();
    await prod?.close();
    if (dev) await expectInvariants(dev.db.store);
    await dev?.close();
  });

  it('names only its own assets: no URL in the page leaves the server', async () => {
    const page = await (await fetch(dev.http, { headers: { accept: 'text/html' } })).text();
    expect(page).toMatch(/graphiql\/graphiql\.js/);
    expect(page).not.toMatch(/https?:\/\//);
    const js = await fetch(`${dev.base}/graphiql/graphiql.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    const etag = js.headers.get('etag')!;
    await js.arrayBuffer();
    const again = await fetch(`${dev.base}/graphiql/graphiql.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect((await fetch(`${dev.base}/graphiql/nothing.js`)).status).toBe(404);
  });

  it('in production it is off unless RETRACT_GRAPHIQL=on: no page, no assets', async () => {
    const off = await fetch(prod.http, { headers: { accept: 'text/html' } });
    expect(off.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    await off.arrayBuffer();
    expect((await fetch(`${prod.base}/graphiql/graphiql.js`)).status).toBe(404);
    const on = await fetch(prodOn.http, { headers: { accept: 'text/html' } });
    expect(on.headers.get('content-type')).toMatch(/text\/html/);
    expect(await on.text()).toMatch(/graphiql\/graphiql\.js/);
    expect((await fetch(`${prodOn.base}/graphiql/graphiql.css`)).status).toBe(200);
  });

  describe.skipIf(!HAVE_CHROMIUM)('in Chromium, offline', () => {
    let browser: Browser;
    beforeAll(async () => {
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
      await browser?.close();
    });

    it('loads with every non-loopback request blocked, takes a token after the prefilled "Bearer " and runs a query', async () => {
      const agent = await agentWith(dev.store, 'acme', ['beliefs:read'], 'graphiql');
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const left: string[] = [];
      const problems: string[] = [];
      await context.route('**/*', (route) => {
        const u = new URL(route.request().url());
        if ((u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'ws:') && !LOOPBACK.has(u.hostname)) {
          left.push(u.href);
          return route.abort('internetdisconnected');
        }
        return route.continue();
      });
      try {
        const page = await context.newPage();
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(dev.http);
        const run = page.getByRole('button', { name: /Execute query/ });
        await run.waitFor({ timeout: 60_000 });
        const headers = page.locator('.monaco-editor[data-uri$="request-headers.json"]');
        await expect.poll(() => shown(headers), { timeout: 30_000 }).toMatch(/"Authorization":\s*"Bearer "/);

        // As a user pastes a token: after "Bearer ", inside the quotes, on the headers' second line.
        await headers.click();
        await page.keyboard.press('Control+Home');
        await page.keyboard.press('ArrowDown');
        await page.keyboard.press('End');
        await page.keyboard.press('ArrowLeft');
        await page.keyboard.insertText(agent.token);
        await run.click();

        const result = page.getByRole('region', { name: 'Result Window' });
        await expect.poll(() => shown(result), { timeout: 30_000 }).toContain(`"name": "${agent.name}"`);
        expect(await shown(result)).toContain('"fleet": "acme"');
        // GraphiQL has the schema (its introspection query is admitted): the documentation explorer lists the root types.
        await page.getByRole('button', { name: 'Show Documentation Explorer' }).click();
        await page.getByText('Root Types').waitFor({ timeout: 30_000 });
        await page.getByRole('link', { name: 'Query' }).first().waitFor();
        expect(left).toEqual([]);
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    });
  });
});
