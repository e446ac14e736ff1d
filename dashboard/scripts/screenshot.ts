// Headless screenshot of the built dashboard (sign-in state unless DASHBOARD_TOKEN is set).
//   npm run build && RETRACT_BOOTSTRAP_TOKEN=… npm start      (the real server serves dashboard/dist at /dashboard/)
//   DASHBOARD_TOKEN=… npx tsx dashboard/scripts/screenshot.ts http://127.0.0.1:4000/dashboard/ /tmp/dashboard.png
import { chromium } from 'playwright-core';

const url = process.argv[2] ?? 'http://127.0.0.1:4000/dashboard/';
const out = process.argv[3] ?? 'dashboard-signin.png';

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
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
try {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  await page.goto(url, { waitUntil: 'networkidle' });
  await page.getByTestId('token-input').waitFor();
  const token = process.env.DASHBOARD_TOKEN;
  if (token) {
    await page.getByTestId('token-input').fill(token);
    await page.getByTestId('sign-in').click();
    await page.getByTestId('viewer-name').waitFor({ state: 'visible' });
    await page.waitForTimeout(800);
  }
  await page.screenshot({ path: out, fullPage: true });
  console.log(`wrote ${out}`);
  if (problems.length) console.log(problems.join('\n'));
} finally {
  await browser.close();
}
