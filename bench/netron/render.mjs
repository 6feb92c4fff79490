// Time Netron rendering a model in headless Debian chromium (playwright-core, no browser download).
// Usage: node render.mjs URL TIMEOUT_MS  -> prints {"render_s": ..., "nodes": ...}
import { chromium } from 'playwright-core';

const [url, timeoutMs] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const t0 = Date.now();
  await page.goto(url);
  // Netron asks for cookie consent first; a user clicks Accept once.
  try { await page.getByText('Accept', { exact: true }).click({ timeout: 5000 }); } catch (e) { /* no prompt */ }
  // Netron replaces window.eval, so wait on a selector rather than a page function.
  await page.waitForSelector('#nodes > *', { state: 'attached', timeout: Number(timeoutMs) });
  const t1 = Date.now();
  const nodes = await page.locator('#nodes > *').count();
  console.log(JSON.stringify({ render_s: (t1 - t0) / 1000, nodes }));
} catch (e) {
  console.log(JSON.stringify({ error: String(e).split('\n')[0] }));
} finally {
  await browser.close();
}
