// Headless Chromium for the browser tests (report_browser.js,
// dashboard_browser.js, dashboard_edges.js): Debian's /usr/bin/chromium
// through playwright-core from npm, with the flags this machine needs, in a
// fresh profile that close() removes.
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

module.exports = { launch };
