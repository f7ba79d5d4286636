// Drives strobe serve's dashboard in headless Chromium over the odd cases of
// tests/integration/test_dashboard_edges.py and prints one JSON object:
//   node dashboard_edges.js BASE_URL SPEC_JSON
// SPEC_JSON: {"keys": {"run", "pick": [series keys]}, "multi": {"run", "pick"},
//             "compare": {"runs", "metric"}, "live": {"run", "key", "flag"}, "lost": {"run"}, "many": {}, "race": {"run"},
//             "percent": {"name"}, "figures": [run ids], "wide": [urls],
//             "huge": {"run", "keys"}, "formats": [run ids], "pinned": {"name", "ask", "started"}}
// pinned: the page of the running run NAME; the driver makes the file "ask",
// the test starts another run of that name and makes "started"
// live: the job logs the metric once the file "flag" exists, made here once
// the page is open
// Each part is optional. Console errors, console warnings and page errors
// are listed in "errors" under the part they came in.
'use strict';
const path = require('path');
const fs = require('fs');
const { launch } = require('./chromium');

async function main() {
  const [base, specJson] = process.argv.slice(2);
  const spec = JSON.parse(specJson);
  const { ctx, close } = await launch();
  const out = { errors: {}, steps: {} };
  let part = 'setup';
  const err = (s) => { (out.errors[part] = out.errors[part] || []).push(s); };
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    page.on('console', (m) => {
      if (m.type() !== 'error' && m.type() !== 'warning') return;
      const loc = (m.location() && m.location().url) || '';
      if (/Failed to load resource.*404/.test(m.text()) && /\/api\/runs\/[^/]+\/texts$/.test(loc)) return;
      err(m.type() + ': ' + m.text() + (loc ? ' @ ' + loc : ''));
    });
    page.on('pageerror', (e) => err('page: ' + String(e)));
    const settle = () => page.waitForFunction(() => document.body.dataset.ready === '1'
      && document.body.dataset.hash === location.hash, null, { timeout: 15000 });
    // the metric charts drawn, each with the number of points it was given
    const charts = () => page.evaluate(() => Object.fromEntries(Array.from(
      document.querySelectorAll('#app .charts .chart[data-metric]'))
      .filter((c) => c.dataset.metric !== 'steps' && c.dataset.metric !== 'phases')
      .map((c) => [c.dataset.metric, c.dataset.points === undefined ? null : Number(c.dataset.points)])));
    // every chart of `keys` has points, or 5 s went by
    const drawn = (keys) => page.waitForFunction((ks) => ks.every((k) => {
      const c = Array.from(document.querySelectorAll('.chart[data-metric]')).find((x) => x.dataset.metric === k);
      return c && Number(c.dataset.points) > 0;
    }), keys, { timeout: 5000 }).catch(() => null);
    // tick the picker's box of each key, one at a time, as a user does
    const pick = async (keys) => {
      for (const k of keys) {
        await page.evaluate((key) => {
          const l = Array.from(document.querySelectorAll('label.m')).find((x) => x.dataset.key === key);
          if (!l) return;
          const cb = l.querySelector('input');
          cb.checked = true;
          cb.dispatchEvent(new Event('change'));
        }, k);
      }
    };
    const picked = async (p) => {
      part = p;
      const s = spec[p];
      await page.goto(base + '#/run/' + s.run);
      await settle();
      await pick(s.pick);
      await drawn(s.pick);
      const first = { hash: await page.evaluate(() => location.hash), charts: await charts() };
      await page.reload();
      await settle();
      await drawn(s.pick);
      out.steps[p] = { first, reloaded: { hash: await page.evaluate(() => location.hash), charts: await charts() } };
    };
    if (spec.keys) await picked('keys');
    if (spec.multi) await picked('multi');

    if (spec.compare) {
      part = 'compare';
      const s = spec.compare;
      await page.goto(base + '#/compare?runs=' + encodeURIComponent(s.runs) + '&metric=' + encodeURIComponent(s.metric));
      await settle();
      out.steps.compare = await page.evaluate(() => ({
        metric: document.getElementById('compare-chart').dataset.metric || null,
        failed: Array.from(document.querySelectorAll('.error')).map((e) => e.textContent),
      }));
    }

    if (spec.live) {
      part = 'live';
      const s = spec.live;
      await page.goto(base + '#/run/' + s.run);
      await settle();
      const listed = () => page.evaluate(() => Array.from(document.querySelectorAll('label.m')).map((l) => l.dataset.key));
      const before = await listed();
      // the job logs the metric from now on; the page refreshes every 3 s
      fs.writeFileSync(s.flag, '');
      const seen = await page.waitForFunction((k) => Array.from(document.querySelectorAll('label.m'))
        .some((l) => l.dataset.key === k), s.key, { timeout: 15000 }).then(() => true, () => false);
      out.steps.live = { before, seen, after: await listed() };
    }

    if (spec.many) {
      part = 'many';
      await page.goto(base + '#/runs?sort=experiment');
      await settle();
      const rows = () => page.evaluate(() => ({
        count: document.getElementById('runs-count').textContent,
        rows: document.querySelectorAll('#runs tbody tr').length,
        first: (document.querySelector('#runs tbody tr td:nth-child(3)') || {}).textContent || null,
        last: Array.from(document.querySelectorAll('#runs tbody tr td:nth-child(3)')).slice(-1).map((t) => t.textContent)[0] || null,
        more: !!document.getElementById('more-runs'),
      }));
      const first = await rows();
      if (first.more) {
        await page.click('#more-runs');
        await settle();
        await page.waitForFunction((n) => document.querySelectorAll('#runs tbody tr').length > n, first.rows, { timeout: 10000 })
          .catch(() => null);
      }
      out.steps.many = { first, more: await rows(), hash: await page.evaluate(() => location.hash) };
    }

    if (spec.race) {
      // answers that come late: held here until the later ask was answered
      // (a sort before another, a zoomed range before Reset zoom, compare's
      // metric changed twice in a row)
      part = 'race';
      const hold = async (re) => {
        let release;
        const gate = new Promise((r) => { release = r; });
        await page.route((u) => re.test(u.href), async (route) => {
          await gate;
          await route.continue().catch(() => null);
        });
        return release;
      };
      const answered = (re) => page.waitForResponse((r) => re.test(r.url()), { timeout: 10000 });
      const processed = () => page.waitForTimeout(300); // a late answer's handler runs (or is dropped)

      let release = await hold(/\/api\/runs\?.*sort=findings/);
      await page.goto(base + '#/runs');
      await settle();
      let late = answered(/sort=findings/);
      let later = answered(/sort=name/);
      await page.click('th[data-sort="findings"]');
      await page.click('th[data-sort="name"]');
      await later;
      await settle();
      release();
      await late;
      await processed();
      const list = await page.evaluate(() => ({
        hash: location.hash,
        names: Array.from(document.querySelectorAll('#runs a.run-link')).slice(0, 5).map((a) => a.textContent),
      }));

      release = await hold(/\/series\?.*from=/);
      await page.goto(base + '#/run/' + spec.race.run);
      await settle();
      await page.waitForSelector('.chart[data-metric="cpu.util"][data-points]');
      const pts = () => page.$eval('.chart[data-metric="cpu.util"]', (c) => Number(c.dataset.points));
      const whole = await pts();
      const bb = await (await page.$('.chart[data-metric="cpu.util"] .u-over')).boundingBox();
      const zoomAsked = page.waitForRequest((r) => /\/series\?.*name=cpu\.util.*from=/.test(r.url()), { timeout: 10000 });
      late = answered(/\/series\?.*name=cpu\.util.*from=/);
      await page.mouse.move(bb.x + bb.width * 0.4, bb.y + bb.height / 2);
      await page.mouse.down();
      await page.mouse.move(bb.x + bb.width * 0.5, bb.y + bb.height / 2, { steps: 4 });
      await page.mouse.move(bb.x + bb.width * 0.6, bb.y + bb.height / 2, { steps: 4 });
      await page.mouse.up();
      await zoomAsked;
      later = answered(/\/series\?name=cpu\.util&points=\d+$/);
      await page.click('#reset-zoom');
      await later;
      await processed();
      release();
      await late;
      await processed();
      out.steps.race = { list, whole, after: await pts(), range: await page.$eval('#range', (e) => e.textContent) };

      await page.goto(base + '#/compare?runs=' + spec.race.run + '&metric=cpu.util');
      await settle();
      release = await hold(/\/series\?.*name=proc\.rss_bytes/);
      const first = answered(/\/series\?.*name=proc\.cpu/);
      late = answered(/\/series\?.*name=proc\.rss_bytes/);
      await page.evaluate(() => { // two choices in a row, as the arrow keys on the select make them
        const sel = document.getElementById('cmp-metric');
        for (const k of ['proc.cpu', 'proc.rss_bytes']) {
          sel.value = k;
          sel.dispatchEvent(new Event('change'));
        }
      });
      await first;
      await processed();
      const meanwhile = await page.$$eval('#compare-chart .error', (es) => es.map((e) => e.textContent));
      release();
      await late;
      await settle();
      out.steps.race.compare = { meanwhile, metric: await page.$eval('#compare-chart', (c) => c.dataset.metric) };
      await page.unroute('**');
    }

    if (spec.percent) {
      // a link typed by hand with a bare '%': the run it names, not a blank page
      part = 'percent';
      await page.goto(base + '#/run/' + spec.percent.name);
      await settle().catch(() => null);
      out.steps.percent = await page.evaluate(() => ({
        name: (document.getElementById('run-name') || {}).textContent || null,
        error: (document.querySelector('.error') || {}).textContent || null,
      }));
    }

    if (spec.figures) {
      // the header cards: samples/s and the means, as the runs list has them
      part = 'figures';
      out.steps.figures = {};
      for (const id of spec.figures) {
        await page.goto(base + '#/run/' + id);
        await settle();
        await page.waitForTimeout(300);
        out.steps.figures[id] = await page.evaluate(() => Object.fromEntries(Array.from(document.querySelectorAll('.card'))
          .map((c) => [c.querySelector('.k').textContent, c.querySelector('.v').textContent])));
      }
    }

    if (spec.wide) {
      // names and params of 200 bytes without a space: the page as wide as the window
      part = 'wide';
      out.steps.wide = {};
      for (const u of spec.wide) {
        await page.goto(base + u);
        await settle();
        await page.waitForTimeout(300);
        out.steps.wide[u] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      }
    }

    if (spec.huge) {
      // a metric of 1e15 and more (a GPU's FLOP/s): the legend's reading under the cursor
      part = 'huge';
      const s = spec.huge;
      out.steps.huge = {};
      for (const key of s.keys) {
        await page.goto(base + '#/run/' + s.run + '?m=' + encodeURIComponent(key));
        await settle();
        await drawn([key]);
        const over = await page.$(`.chart[data-metric="${key}"] .u-over`);
        const bb = await over.boundingBox();
        await page.mouse.move(bb.x + bb.width * 0.5, bb.y + bb.height / 2);
        await page.waitForTimeout(200);
        out.steps.huge[key] = await page.$$eval(`.chart[data-metric="${key}"] .u-legend .u-series`, (rs) =>
          Object.fromEntries(rs.map((r) => [r.querySelector('.u-label').textContent, r.querySelector('.u-value').textContent])));
      }
    }

    if (spec.formats) {
      // durations and sizes where a figure rounds up into the next unit
      part = 'formats';
      out.steps.formats = {};
      for (const id of spec.formats) {
        await page.goto(base + '#/run/' + id);
        await settle();
        out.steps.formats[id] = await page.evaluate(() => {
          const dl = Array.from(document.querySelectorAll('#env dt'));
          const mem = dl.find((d) => d.textContent === 'memory');
          return { duration: document.querySelector('.card .v').textContent, memory: mem ? mem.nextSibling.textContent : null };
        });
      }
    }

    if (spec.pinned) {
      // #/run/NAME of a running run; then the test starts another run of that name
      part = 'pinned';
      const s = spec.pinned;
      await page.goto(base + '#/run/' + encodeURIComponent(s.name));
      await settle();
      const shown = () => page.$eval('dl.kv code', (c) => c.textContent);
      const first = await shown();
      fs.writeFileSync(s.ask, '');
      for (let i = 0; i < 400 && !fs.existsSync(s.started); i++) await page.waitForTimeout(50);
      // two refreshes of the run's record after the second run is in the store
      let refreshed = 0;
      for (let i = 0; i < 2; i++) {
        const r = await page.waitForResponse((x) => /\/api\/runs\/[^/?]+$/.test(new URL(x.url()).pathname), { timeout: 10000 })
          .catch(() => null);
        if (r) refreshed++;
      }
      await page.waitForTimeout(300);
      out.steps.pinned = { first, later: await shown(), refreshed };
    }

    if (spec.lost) {
      part = 'lost';
      await page.goto(base + '#/run/' + spec.lost.run);
      await settle();
      out.steps.lost = await page.evaluate(() => ({
        status: document.getElementById('run-status').textContent,
        range: document.getElementById('range').textContent,
        duration: document.querySelector('.card .v').textContent,
      }));
    }
  } catch (e) {
    err('driver: ' + e.message.split('\n')[0]);
  } finally {
    await close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stdout.write(JSON.stringify({ errors: { main: ['driver: ' + e.message] } }) + '\n'); });
