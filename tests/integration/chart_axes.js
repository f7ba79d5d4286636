// The axes of every chart of strobe's two pages in headless Chromium
// (chromium.js), judged by axes.js, for tests/integration/test_chart_axes.py:
//   node chart_axes.js SPEC_FILE ARTIFACT_DIR
// SPEC_FILE holds JSON: {"pages": [{"name": N, "url": U, "zoom": [a, b] | absent,
//   "kinds": [[title regex, x unit, y unit], ...], "expect": [title regex, ...]}]}
// A page whose URL has a hash is a dashboard view: it is drawn when <body>
// has data-ready="1" and data-hash equal to the URL's hash, and, on a run's
// page, every chart has its points (data-points). "zoom" calls the report's zoomTo(a, b)
// before the axes are read. Prints one JSON object: per page the charts'
// titles, their labels, what axes.js found wrong, the expected titles not
// seen, and console errors.
'use strict';
const fs = require('fs');
const path = require('path');
const { launch } = require('./chromium');
const axes = require('./axes');

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const artifacts = process.argv[3];
  const { ctx, close } = await launch();
  const out = { pages: {}, errors: [] };
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    await page.addInitScript(axes.hook);
    page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
    page.on('pageerror', (e) => out.errors.push(String(e)));
    for (const p of spec.pages) {
      const r = { titles: [], bad: [], labels: {}, missing: [] };
      const t0 = Date.now();
      out.pages[p.name] = r;
      try {
        await page.goto(p.url);
        if (new URL(p.url).hash) {
          await page.waitForFunction(() => document.body.dataset.ready === '1'
            && document.body.dataset.hash === location.hash, null, { timeout: 20000 });
          // a run's charts: each has its points (the phases' come with the steps')
          await page.waitForFunction(() => !location.hash.startsWith('#/run/') || Array.from(document
            .querySelectorAll('.chart[data-metric]:not([data-metric="phases"])'))
            .every((c) => c.dataset.points !== undefined), null, { timeout: 20000 });
        } else {
          await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
        }
        if (p.zoom) await page.evaluate((z) => window.strobeReport.zoomTo(z[0], z[1]), p.zoom);
        // uPlot draws a frame after setData / setScale
        await page.evaluate(() => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res))));
        const charts = await axes.collect(page);
        const kinds = p.kinds.map(([re, x, y]) => [new RegExp(re), x, y]);
        Object.assign(r, axes.judgeAll(charts, (t) => {
          const k = kinds.find(([re]) => re.test(t));
          return k ? [k[1], k[2]] : null;
        }));
        r.missing = p.expect.filter((re) => !r.titles.some((t) => new RegExp(re).test(t)));
        if (p.shot) await page.screenshot({ path: path.join(artifacts, p.shot), fullPage: true });
      } catch (e) {
        r.bad.push('driver: ' + e.message.split('\n')[0]);
      }
      r.elapsed_s = (Date.now() - t0) / 1000;
    }
  } catch (e) {
    out.errors.push('driver: ' + e.message);
  } finally {
    await close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stdout.write(JSON.stringify({ errors: ['driver: ' + e.message] }) + '\n'); });
