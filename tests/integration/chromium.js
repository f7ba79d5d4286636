// Headless Chromium for the browser tests (report_browser.js,
// dashboard_browser.js, dashboard_edges.js, sweep_browser.js): Debian's
// /usr/bin/chromium through playwright-core from npm, with the flags this
// machine needs, in a fresh profile that close() removes.
'use strict';
const path = require('path');
const fs = require('fs');
const os = require('os');
const { chromium } = require(path.join(__dirname, '..', '..', 'node_modules', 'playwright-core'));

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// options: playwright's launchPersistentContext options on top of ours
async function launch(options) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'strobe-chromium-'));
  const ctx = await chromium.launchPersistentContext(profile, Object.assign({
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ARGS,
  }, options || {}));
  const close = async () => {
    await ctx.close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return { ctx, close };
}

// A driver's whole walk, printed as one JSON line on stdout: fn(page, out)
// on a fresh page, where each request ok(url) refuses is aborted and listed
// in out.foreign, console and page errors go to out.errors (a throw too),
// and out.elapsed_s is the walk's time.
async function drive(ok, fn) {
  const out = { errors: [], foreign: [], steps: {} };
  const t0 = Date.now();
  try {
    const { ctx, close } = await launch();
    try {
      const page = ctx.pages()[0] || await ctx.newPage();
      await page.route('**/*', (route) => {
        const url = route.request().url();
        if (ok(url)) return route.continue();
        out.foreign.push(url);
        return route.abort();
      });
      page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
      page.on('pageerror', (e) => out.errors.push(String(e)));
      await fn(page, out);
    } finally {
      await close();
    }
  } catch (e) {
    out.errors.push('driver: ' + e.message);
  }
  out.elapsed_s = (Date.now() - t0) / 1000;
  process.stdout.write(JSON.stringify(out) + '\n');
}

module.exports = { launch, drive };
