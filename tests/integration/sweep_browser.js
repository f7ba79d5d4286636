// The dashboard's campaign views in headless Chromium (Debian's, through
// playwright-core), for test_sweep_view.py; prints one JSON object on stdout:
//   node sweep_browser.js BASE_URL ARTIFACT_DIR SPEC_JSON
// SPEC_JSON: {"campaign": name, "shot": screenshot name prefix,
// "click_run": follow the first run link and read the run page,
// "wait_done": N to wait, without reloading, until the page says N
// workloads are done (the page's own refresh), then read it again}.
// Requests off the server's origin are aborted and listed in "foreign";
// console and page errors in "errors".
'use strict';
const path = require('path');
const { drive } = require('./chromium');

// What the campaigns list and a campaign's page show, numbers as the page
// writes them (text) and as it holds them (data-v).
function state() {
  const txt = (sel) => { const e = document.querySelector(sel); return e ? e.textContent : null; };
  return {
    hash: location.hash,
    nav: (document.querySelector('nav a.active') || {}).textContent || null,
    list: Array.from(document.querySelectorAll('#campaigns tbody tr')).map((r) => ({
      name: r.dataset.name,
      href: r.querySelector('a.campaign-link').getAttribute('href'),
      status: r.cells[1].textContent,
      progress: r.cells[2].textContent,
    })),
    name: txt('#campaign-name'),
    status: txt('#campaign-status'),
    done: (() => { const e = document.getElementById('campaign-done');
      return e ? { done: Number(e.dataset.done), total: Number(e.dataset.total), text: e.textContent } : null; })(),
    now: txt('#campaign-now'),
    best_text: txt('#campaign-best'),
    error: txt('.error'),
    groups: Array.from(document.querySelectorAll('section.colloc')).map((s) => ({
      collocation: s.dataset.collocation,
      title: s.querySelector('h2').textContent,
      rows: Array.from(s.querySelectorAll('tbody tr')).map((r) => ({
        workload: r.dataset.workload,
        best: r.classList.contains('best'),
        status: r.querySelector('.status').textContent,
        devices: r.querySelector('td.devices').textContent,
        runs: Array.from(r.querySelectorAll('a.run-link')).map((a) => ({
          id: a.dataset.id, href: a.getAttribute('href'), text: a.textContent })),
        params: Array.from(r.querySelectorAll('td.params .chip')).map((c) => c.textContent),
        figs: Object.fromEntries(Array.from(r.querySelectorAll('td[data-k]')).map((td) =>
          [td.dataset.k, { v: td.dataset.v, text: td.textContent }])),
      })),
    })),
    bars: Array.from(document.querySelectorAll('#campaign-chart .bar-group')).map((g) => ({
      collocation: g.dataset.collocation,
      rows: Array.from(g.querySelectorAll('.bar-row')).map((b) => ({
        workload: b.dataset.workload, v: b.dataset.v, best: b.classList.contains('best'),
        text: b.querySelector('.bar-value').textContent,
        width: b.querySelector('.fill').getBoundingClientRect().width,
      })),
    })),
  };
}

async function walk(page, out, where, artifacts, spec) {
  const shot = (name) => page.screenshot({ path: path.join(artifacts, spec.shot + '-' + name + '.png'), fullPage: true });
  const settle = () => page.waitForFunction(() => document.body.dataset.ready === '1' &&
    document.body.dataset.hash === location.hash, null, { timeout: 60000 });
  // the list, from the nav's entry
  await page.goto(where + '#/runs');
  await settle();
  await page.click('nav a[data-nav="campaigns"]');
  await settle();
  out.steps.list = await page.evaluate(state);
  // the campaign, from its link in the list
  await page.click(`#campaigns tr[data-name="${spec.campaign.replace(/["\\]/g, '\\$&')}"] a.campaign-link`);
  await settle();
  out.steps.page = await page.evaluate(state);
  await shot('campaign');
  if (spec.wait_done) {
    const t = Date.now();
    await page.waitForFunction((n) => {
      const e = document.getElementById('campaign-done');
      return e && Number(e.dataset.done) >= n;
    }, spec.wait_done, { timeout: 90000 });
    out.steps.waited_s = (Date.now() - t) / 1000;
    out.steps.refreshed = await page.evaluate(state);
    await shot('refreshed');
  }
  const a = spec.click_run ? await page.$('a.run-link') : null;
  if (a) {
    const id = await a.getAttribute('data-id');
    await a.click();
    await settle();
    out.steps.run = await page.evaluate((want) => ({
      id: want,
      hash: location.hash,
      name: (document.getElementById('run-name') || {}).textContent || null,
      ids: Array.from(document.querySelectorAll('dl.kv code')).map((c) => c.textContent),
      error: (document.querySelector('.error') || {}).textContent || null,
    }), id);
  }
}

const [where, artifacts, specJson] = process.argv.slice(2);
const origin = new URL(where).origin;
drive((url) => url.startsWith(origin + '/'), (page, out) => walk(page, out, where, artifacts, JSON.parse(specJson)));
