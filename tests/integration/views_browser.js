// Views of a run of many nodes in headless Chromium (Debian's, through
// playwright-core), for test_views.py and test_views_256.py; prints one
// JSON object on stdout:
//   node views_browser.js dashboard BASE_URL RUN ARTIFACT_DIR SPEC_JSON
//   node views_browser.js report FILE.html - ARTIFACT_DIR SPEC_JSON
// SPEC_JSON: {"pick": node name or null, "click": node name or null,
// "log": a line of the picked node's output, "shot": screenshot name
// prefix, "full": false for screenshots of the window only}. Requests off the page's origin (the
// server's, or file: and data: for the report) are aborted and listed in
// "foreign"; console and page errors in "errors".
'use strict';
const path = require('path');
const { launch } = require('./chromium');

// What a page shows of its nodes: each heatmap's rows and per-row means
// (the dashboard keeps what it drew on the chart's element), the nodes
// table, the pickers, the charts.
function state() {
  const rowMeans = (rows) => rows.map((r) => {
    const v = r.filter((x) => x !== null);
    return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
  });
  return {
    hash: location.hash,
    heat: Object.fromEntries(Array.from(document.querySelectorAll('[data-heatmap]')).map((b) => [b.dataset.heatmap, {
      rows: Number(b.dataset.rows),
      nodes: b.heat ? b.heat.nodes : null,
      means: b.heat ? rowMeans(b.heat.mean) : null,
      ink: (() => {
        const cv = b.querySelector('canvas'), d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
          if (d[i + 3] > 230 && Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n++;
        }
        return n;
      })(),
    }])),
    nodes: Array.from(document.querySelectorAll('#nodes tbody tr, #nodes-table tr')).map((r) => r.cells[0].textContent)
      .filter((t) => t !== 'Node'),
    pick: Array.from(document.querySelectorAll('#node-pick option')).map((o) => o.value),
    picked: (document.getElementById('node-pick') || {}).value,
    charts: Array.from(document.querySelectorAll('.chart[data-metric]')).map((c) => c.dataset.metric),
    picker: Array.from(document.querySelectorAll('label.m')).map((l) => l.dataset.key),
    findings_head: Array.from(document.querySelectorAll('#findings thead th, #findings tr:first-child th'))
      .map((t) => t.textContent),
    logs: Array.from(document.querySelectorAll('pre.text[data-kind="stdout"]')).map((p) => p.textContent),
    no_logs: (document.getElementById('no-logs') || {}).textContent || null,
    sections: Array.from(document.querySelectorAll('section h2')).map((h) => h.textContent),
    titles: Array.from(document.querySelectorAll('.u-title')).map((t) => t.textContent),
    stats_rows: document.querySelectorAll('#stats-table tr').length - 1,
    charts_node: (document.querySelector('[data-node]') || {dataset: {}}).dataset.node,
  };
}

async function main() {
  const [mode, where, run, artifacts, specJson] = process.argv.slice(2);
  const spec = JSON.parse(specJson);
  const { ctx, close } = await launch();
  const out = { errors: [], foreign: [], steps: {} };
  const t0 = Date.now();
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    const origin = mode === 'dashboard' ? new URL(where).origin : null;
    await page.route('**/*', (route) => {
      const url = route.request().url();
      const ok = origin ? url.startsWith(origin + '/') : url.startsWith('file:') || url.startsWith('data:');
      if (ok) return route.continue();
      out.foreign.push(url);
      return route.abort();
    });
    page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
    page.on('pageerror', (e) => out.errors.push(String(e)));
    // the whole page, or (spec.full false: thousands of rows) what fits the window
    const shot = (name) => page.screenshot({ path: path.join(artifacts, spec.shot + '-' + name + '.png'),
      fullPage: spec.full !== false });
    if (mode === 'dashboard') {
      const settle = async () => {
        await page.waitForFunction(() => document.body.dataset.ready === '1' &&
          document.body.dataset.hash === location.hash, null, { timeout: 60000 });
        // the heatmaps fetch once drawn: wait for their rows
        await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-heatmap]'))
          .every((b) => b.dataset.rows), null, { timeout: 60000 });
        await page.waitForTimeout(300);
      };
      await page.goto(where + '#/runs');
      await page.waitForSelector('#runs tbody tr', { timeout: 30000 });
      out.steps.runs = await page.evaluate(() => Array.from(document.querySelectorAll('#runs tbody tr')).map((r) => ({
        id: r.dataset.id, nodes: r.cells[r.cells.length - 1].textContent })));
      await page.goto(where + '#/run/' + run);
      await settle();
      out.steps.all = await page.evaluate(state);
      await shot('all');
      if (spec.pick) {
        await page.selectOption('#node-pick', spec.pick);
        await page.waitForFunction((n) => location.hash.includes('node=' + encodeURIComponent(n)), spec.pick);
        await page.waitForTimeout(300);
        // its output, from the node's own run
        if (spec.log) await page.waitForFunction((t) => Array.from(document.querySelectorAll('pre.text'))
          .some((p) => p.textContent.includes(t)), spec.log, { timeout: 15000 });
        out.steps.picked = await page.evaluate(state);
        await shot('picked');
        // a reload keeps the node
        await page.reload();
        await settle();
        out.steps.reloaded = await page.evaluate(state);
        await page.selectOption('#node-pick', '');
        await page.waitForTimeout(300);
        out.steps.unpicked = await page.evaluate(state);
      }
      if (spec.click) {
        await page.click(`#nodes a.node-link >> text="${spec.click}"`);
        await page.waitForTimeout(300);
        out.steps.clicked = await page.evaluate(state);
      }
    } else {
      await page.goto('file://' + path.resolve(where));
      await page.waitForSelector('body[data-ready="1"]', { timeout: 60000 });
      out.steps.all = await page.evaluate(state);
      await shot('report');
      if (spec.pick) {
        await page.selectOption('#node-pick', spec.pick);
        await page.selectOption('#stats-node', spec.pick);
        await page.waitForTimeout(200);
        out.steps.picked = await page.evaluate(state);
      }
      // the heatmaps' own data, as the page has it
      out.steps.data = await page.evaluate(() => {
        const D = JSON.parse(document.getElementById('strobe-data').textContent);
        return (D.heatmaps || []).map((h) => ({ metric: h.metric, nodes: h.nodes, node_mean: h.node_mean }));
      });
    }
  } catch (e) {
    out.errors.push('driver: ' + e.message);
  } finally {
    await close();
  }
  out.elapsed_s = (Date.now() - t0) / 1000;
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stdout.write(JSON.stringify({ errors: ['driver: ' + e.message] }) + '\n'); });
