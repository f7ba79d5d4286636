// Drives strobe serve's dashboard in headless Chromium (Debian's, through
// playwright-core from the repo's node_modules) and prints one JSON object on
// stdout for tests/integration/test_dashboard.py to judge:
//   node dashboard_browser.js BASE_URL ARTIFACT_DIR SPEC_JSON
// SPEC_JSON: {"experiment": E, "param": "batch", "hostile": id, "hostile_name": s}
// Requests outside BASE_URL's origin (and blob:/data:) are aborted and listed
// in "foreign"; console errors and page errors are listed in "errors". The one
// console error let through is the browser's own line for a 404 of
// /api/runs/{id}/texts, which the page handles ("no logs recorded").
'use strict';
const path = require('path');
const fs = require('fs');
const { launch } = require('./chromium');

async function main() {
  const [base, artifacts, specJson] = process.argv.slice(2);
  const spec = JSON.parse(specJson);
  const origin = new URL(base).origin;
  const { ctx, close } = await launch({ acceptDownloads: true });
  const out = { errors: [], foreign: [], requests: [], steps: {} };
  const t0 = Date.now();
  const step = (name, v) => { out.steps[name] = v; };
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(origin + '/') || url.startsWith('data:') || url.startsWith('blob:' + origin)) {
        out.requests.push(url.slice(origin.length));
        return route.continue();
      }
      out.foreign.push(url);
      return route.abort();
    });
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const loc = (m.location() && m.location().url) || '';
      if (/Failed to load resource.*404/.test(m.text()) && /\/api\/runs\/[^/]+\/texts$/.test(loc)) return;
      out.errors.push(m.text() + (loc ? ' @ ' + loc : ''));
    });
    page.on('pageerror', (e) => out.errors.push(String(e)));
    const settle = async () => {
      await page.waitForFunction(() => document.body.dataset.ready === '1'
      && document.body.dataset.hash === location.hash, null, { timeout: 15000 });
    };
    const shot = (name) => page.screenshot({ path: path.join(artifacts, name), fullPage: true });
    const names = () => page.$$eval('#runs a.run-link', (as) => as.map((a) => a.textContent));

    // ---- a running run's output, refreshed while it records
    const liveLogs = async (id) => {
      await page.goto(base + '#/run/' + id);
      const lastTick = () => page.evaluate(() => {
        const p = document.querySelector('#app pre[data-kind="stdout"]');
        const m = p ? p.textContent.match(/tick (\d+)\n*$/) : null;
        return m ? Number(m[1]) : -1;
      });
      await page.waitForFunction(() => /tick \d+/.test((document.querySelector('pre[data-kind="stdout"]') || {}).textContent || ''), null, { timeout: 20000 });
      const first = await lastTick();
      await page.waitForFunction((f) => {
        const p = document.querySelector('pre[data-kind="stdout"]');
        const m = p ? p.textContent.match(/tick (\d+)\n*$/) : null;
        return m && Number(m[1]) >= f + 4;
      }, first, { timeout: 25000 });
      step('live_logs', { first, later: await lastTick() });
    };

    // the walk-through over finished runs; or, in a second invocation, the
    // page of a run that is still recording
    const walkThrough = async () => {
      // ---- runs list
      await page.goto(base + '#/runs');
      await settle();
      await page.waitForSelector('#runs tbody tr');
      step('runs', {
        names: await names(),
        columns: await page.$$eval('#runs thead th', (t) => t.map((x) => x.textContent.replace(/ [▲▼]$/, ''))),
        injected: await page.evaluate(() => document.querySelectorAll('#app img, #app script, #app iframe').length),
      });
      await shot('dashboard-runs.png');

      // sort by steps, descending (click twice: ascending, then descending)
      await page.click('th[data-sort="steps"]');
      await settle();
      await page.click('th[data-sort="steps"]');
      await settle();
      step('sort', {
        hash: await page.evaluate(() => location.hash),
        steps: await page.$$eval('#runs tbody tr td:nth-child(8)', (t) => t.map((x) => x.textContent)),
      });

      // filter by experiment (the select), then the drill-down link of a workload
      await page.selectOption('#f-experiment', spec.experiment);
      await settle();
      await page.waitForFunction((e) => Array.from(document.querySelectorAll('#runs tbody tr td:nth-child(3)'))
        .every((td) => td.textContent === e), spec.experiment);
      step('filter', { hash: await page.evaluate(() => location.hash), names: await names() });
      await shot('dashboard-runs-filtered.png');

      // ---- one run: open it, its charts, zoom one by dragging
      await page.click(`#runs a.run-link >> text="${spec.open_name}"`);
      await settle();
      await page.waitForSelector('.chart[data-metric="cpu.util"][data-points]');
      await page.waitForSelector('.chart[data-metric="steps"][data-points]');
      await page.waitForTimeout(200);
      const before = out.requests.length;
      const info = await page.evaluate(() => ({
        hash: location.hash,
        name: document.getElementById('run-name').textContent,
        charts: Array.from(document.querySelectorAll('.chart[data-metric]')).map((c) => c.dataset.metric),
        // each chart's tooltip and each metric picker entry's: the catalog's help
        help: Object.fromEntries(Array.from(document.querySelectorAll('.chart[data-metric], label.m'))
          .map((c) => [c.dataset.metric || c.dataset.key, c.title])),
        findings: document.querySelectorAll('#findings tbody tr').length,
        // each finding's rule and time range, as "Rule 0.0-1.6 s"
        ranges: Array.from(document.querySelectorAll('#findings tbody tr'))
          .map((r) => r.cells[1].textContent + ' ' + r.querySelector('a.range').textContent),
        logs: (document.getElementById('no-logs') || {}).textContent || null,
        texts: Array.from(document.querySelectorAll('pre.text')).map((p) => p.dataset.kind),
        // saturated pixels of each chart's canvas: data drawn (axes, grid and labels are grey)
        ink: Object.fromEntries(Array.from(document.querySelectorAll('.chart[data-metric]')).map((c) => {
          const cv = c.querySelector('canvas'), d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
          let n = 0;
          for (let i = 0; i < d.length; i += 4) {
            if (d[i + 3] > 230 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
          }
          return [c.dataset.metric, n];
        })),
      }));
      step('run', info);
      await shot('dashboard-run.png');
      const over = await page.$('.chart[data-metric="cpu.util"] .u-over');
      const bb = await over.boundingBox();
      const zoomed = page.waitForResponse((r) => /\/series\?.*from=/.test(r.url()), { timeout: 10000 });
      await page.mouse.move(bb.x + bb.width * 0.3, bb.y + bb.height / 2);
      await page.mouse.down();
      await page.mouse.move(bb.x + bb.width * 0.45, bb.y + bb.height / 2, { steps: 4 });
      await page.mouse.move(bb.x + bb.width * 0.6, bb.y + bb.height / 2, { steps: 4 });
      await page.mouse.up();
      const zr = await zoomed;
      await page.waitForTimeout(300);
      const after = out.requests.slice(before).filter((u) => u.includes('/series?') || u.includes('/steps?'));
      step('zoom', {
        hash: await page.evaluate(() => location.hash),
        range: await page.evaluate(() => document.getElementById('range').textContent),
        refetched: after,
        status: zr.status(),
        body: await zr.json(),
      });
      await shot('dashboard-run-zoomed.png');

      // ---- the hostile name, as text
      await page.goto(base + '#/run/' + spec.hostile);
      await settle();
      step('hostile', await page.evaluate(() => ({
        name: document.getElementById('run-name').textContent,
        title: document.title,
        img: document.querySelectorAll('img').length,
      })));
      await shot('dashboard-run-hostile.png');

      // ---- compare: tick two runs of the experiment, press compare
      await page.goto(base + '#/runs?experiment=' + encodeURIComponent(spec.experiment) + '&sort=name');
      await settle();
      await page.waitForSelector('#runs tbody tr');
      const boxes = await page.$$('#runs input.pick');
      await boxes[0].check();
      await boxes[1].check();
      await page.click('#compare-btn');
      await settle();
      await page.waitForSelector('#compare-chart .u-over');
      await page.$eval('#smooth', (s) => { s.value = '0.8'; s.dispatchEvent(new Event('input', { bubbles: true })); });
      await page.click('#cmp-x button[data-x="step"]');
      await settle();
      await page.waitForFunction(() => document.getElementById('compare-chart').dataset.mode === 'step' &&
        document.getElementById('compare-chart').dataset.smooth === '0.8');
      const analysisReady = () => page.waitForFunction(() => document.getElementById('diff-box').dataset.analysis === 'ready',
        null, { timeout: 15000 });
      const cmpState = () => page.evaluate(() => {
        const c = document.getElementById('compare-chart');
        return {
          hash: location.hash, mode: c.dataset.mode, smooth: c.dataset.smooth, runs: c.dataset.runs,
          metric: c.dataset.metric, slider: document.getElementById('smooth').value,
          toggles: Array.from(document.querySelectorAll('#toggles a')).map((a) => a.textContent),
          diff: Array.from(document.querySelectorAll('#diff tr.differs td:first-child')).map((t) => t.textContent),
          explain: Array.from(document.querySelectorAll('#explain li')).map((l) => l.textContent),
          marked: Array.from(document.querySelectorAll('#diff tr[data-row]')).filter((r) => r.querySelector('td.sig'))
            .map((r) => r.dataset.row),
          analysis_rows: Array.from(document.querySelectorAll('#diff tr[data-row]')).map((r) => r.dataset.row),
          ink: (() => {
            const cv = c.querySelector('canvas'), d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
              if (d[i + 3] && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
            }
            return n;
          })(),
        };
      });
      await analysisReady();
      const cmp1 = await cmpState();
      await page.reload();
      await settle();
      await page.waitForSelector('#compare-chart .u-over');
      await analysisReady();
      const cmp2 = await cmpState();
      step('compare', { before: cmp1, after: cmp2 });
      await shot('dashboard-compare.png');
      const dl = page.waitForEvent('download', { timeout: 10000 });
      await page.click('#export-csv');
      const d = await dl;
      const csv = fs.readFileSync(await d.path(), 'utf8');
      const dl2 = page.waitForEvent('download', { timeout: 10000 });
      await page.click('#export-png');
      const d2 = await dl2;
      const png = fs.readFileSync(await d2.path());
      step('export', {
        csv_name: d.suggestedFilename(), csv_head: csv.split('\n')[0], csv_rows: csv.trim().split('\n').length - 1,
        png_name: d2.suggestedFilename(), png_bytes: png.length, png_magic: png.slice(1, 4).toString(),
      });

      // ---- sweep
      await page.goto(base + '#/sweep?experiment=' + encodeURIComponent(spec.experiment) + '&param=' + spec.param + '&y=samples_per_s');
      await settle();
      await page.waitForSelector('#sweep-chart .u-over');
      step('sweep', await page.evaluate(() => ({
        answer: document.getElementById('sweep-answer').textContent,
        rows: document.querySelectorAll('#sweep-table tbody tr').length,
        points: document.getElementById('sweep-chart').dataset.points,
      })));
      await shot('dashboard-sweep.png');
      step('final_img', await page.evaluate(() => document.querySelectorAll('img').length));
    };
    if (spec.only_live) await liveLogs(spec.only_live);
    else await walkThrough();
  } catch (e) {
    out.errors.push('driver: ' + e.message.split('\n')[0]);
  } finally {
    out.elapsed_s = (Date.now() - t0) / 1000;
    await close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stdout.write(JSON.stringify({ errors: ['driver: ' + e.message] }) + '\n'); });
