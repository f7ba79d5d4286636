// Drives a flame graph page (strobe flame --format html, the report's
// "Python hotspots" section, or the dashboard's run page) in headless
// Chromium and prints one JSON object on stdout for the .py test to judge:
//   node flame_browser.js URL SPEC_JSON
// SPEC_JSON: {"ready": selector to wait for, "flame": selector of the graph
// (.flame), "pick": [[role|null, phase|null, idle], ...] selections to read,
// "hover": [[role, phase, idle, func], ...] frames to hover,
// "zoom": func, "search": text, "scroll": selector to bring into view,
// "shot": a screenshot's path, taken after the hovers, "refresh": flame
// data given to setData after role "main" is picked and main zoomed into,
// as the dashboard does while a run records}
// Every selection reads the graph's total (data-total), the drawn frames of
// depth 1 (name, width, samples) and the canvas width; every hover reads the
// tooltip's text. Requests off the page's origin (file: for a file) are
// aborted and listed in "foreign"; a dialog (alert) is listed in "dialogs".
'use strict';
const { drive } = require('./chromium');

const [url, specJson] = process.argv.slice(2);
const spec = JSON.parse(specJson);
const origin = url.startsWith('file:') ? 'file:' : new URL(url).origin + '/';

drive((u) => u.startsWith(origin) || u.startsWith('data:'), async (page, out) => {
  out.dialogs = [];
  page.on('dialog', (d) => { out.dialogs.push(d.message()); d.dismiss(); });
  await page.goto(url);
  await page.waitForSelector(spec.ready, { timeout: 20000 });
  await page.waitForSelector(spec.flame + '[data-total]', { timeout: 20000 });
  if (spec.scroll) await page.$eval(spec.scroll, (e) => e.scrollIntoView());
  const F = spec.flame;
  const choose = async (role, phase, idle) => {
    await page.$eval(F, (box, a) => {
      const [r, p, i] = a;
      const set = (s, v) => { s.value = v === null ? '\u0000' : v; s.dispatchEvent(new Event('change')); };
      set(box.querySelector('select[aria-label=role]'), r);
      set(box.querySelector('select[aria-label=phase]'), p);
      const c = box.querySelector('input.flame-idle');
      if (c.checked !== i) c.click();
    }, [role, phase, idle]);
  };
  const read = () => page.$eval(F, (box) => {
    const g = window.__flameOf(box);
    return {
      total: Number(box.dataset.total),
      width: box.querySelector('canvas').getBoundingClientRect().width,
      depth1: g.rects().filter((r) => r.depth === 1),
      rects: g.rects().length,
      aggregated: g.rects().filter((r) => r.agg).length,
      top: Array.from(box.querySelectorAll('.flame-table tbody tr')).map((tr) => ({
        func: tr.cells[0].textContent, file: tr.cells[1].textContent,
        self: Number(tr.cells[2].dataset.samples), total: Number(tr.cells[3].dataset.samples),
        self_text: tr.cells[2].textContent, total_text: tr.cells[3].textContent })),
      summary: box.querySelector('.flame-summary').textContent,
    };
  });
  // the widget of a box: the page keeps them (report, dashboard, flame page)
  await page.evaluate(() => {
    window.__flameOf = (box) => window.strobeFlameGraphs.filter((g) => g.element === box)[0];
  });
  const hover = async (func, depth) => {
    const r = await page.$eval(F, (box, a) => {
      const g = window.__flameOf(box);
      const hit = g.rects().filter((x) => x.func === a[0] && (a[1] === undefined || x.depth === a[1]))[0];
      if (!hit) return null;
      const b = box.querySelector('canvas').getBoundingClientRect();
      return { x: b.left + hit.x + hit.w / 2, y: b.top + hit.depth * 18 + 9 };
    }, [func, depth]);
    if (!r) return null;
    await page.mouse.move(r.x, r.y);
    return page.$eval(F + ' .flame-tip', (t) => (t.hidden ? null : Array.from(t.children).map((c) => c.textContent)));
  };

  out.picks = [];
  for (const [role, phase, idle] of spec.pick || []) {
    await choose(role, phase, idle);
    out.picks.push(Object.assign({ role, phase, idle }, await read()));
  }
  out.hovers = [];
  for (const [role, phase, idle, func] of spec.hover || []) {
    await choose(role, phase, idle);
    out.hovers.push({ role, phase, idle, func, tip: await hover(func) });
  }
  if (spec.shot) await page.screenshot({ path: spec.shot, fullPage: true });
  await page.mouse.move(0, 0);
  if (spec.zoom) {
    await choose(null, null, false);
    const before = await read();
    const r = await page.$eval(F, (box, f) => {
      const g = window.__flameOf(box);
      const hit = g.rects().filter((x) => x.func === f && x.depth === 1)[0];
      const b = box.querySelector('canvas').getBoundingClientRect();
      return hit ? { x: b.left + hit.x + hit.w / 2, y: b.top + 18 + 9 } : null;
    }, spec.zoom);
    if (r) await page.mouse.click(r.x, r.y);
    const zoomed = await page.$eval(F, (box) => ({
      zoom: box.dataset.zoom,
      rects: window.__flameOf(box).rects(),
      width: box.querySelector('canvas').getBoundingClientRect().width,
    }));
    // Reset with the keyboard: focus the button, press Enter
    await page.focus(F + ' button.flame-reset');
    await page.keyboard.press('Enter');
    const reset = await page.$eval(F, (box) => box.dataset.zoom);
    out.zoom = { before: before.depth1, zoomed, reset };
  }
  if (spec.search !== undefined) {
    await choose(null, null, false);
    await page.fill(F + ' input.flame-search', spec.search);
    out.search = await page.$eval(F, (box) => ({
      samples: Number(box.dataset.searchSamples), text: box.querySelector('.flame-found').textContent,
      total: Number(box.dataset.total) }));
    await page.fill(F + ' input.flame-search', '');
  }
  if (spec.refresh) {
    await choose('main', null, false);
    await page.$eval(F, (box) => {
      const g = window.__flameOf(box);
      const hit = g.rects().filter((x) => x.func === 'main' && x.depth === 1)[0];
      const b = box.querySelector('canvas').getBoundingClientRect();
      box.querySelector('canvas').dispatchEvent(new MouseEvent('click', {
        clientX: b.left + hit.x + hit.w / 2, clientY: b.top + 18 + 9, bubbles: true }));
    });
    const before = await read();
    await page.$eval(F, (box, d) => window.__flameOf(box).setData(d), spec.refresh);
    const after = await read();
    out.refresh = {
      before: before.total, after: after.total,
      role: await page.$eval(F + ' select[aria-label=role]', (s) => s.value),
      zoom: await page.$eval(F, (box) => box.dataset.zoom),
    };
  }
  out.injected = await page.evaluate(() => document.querySelectorAll('body img, body iframe, b.pwn').length);
});
