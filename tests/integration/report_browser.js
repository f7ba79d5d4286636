// Opens a strobe report in headless Chromium (Debian's, driven by
// playwright-core from the repo's node_modules) and prints one JSON object
// on stdout for tests/integration/test_report.py to judge:
//   node report_browser.js REPORT.html SCREENSHOT.png
// Every request is routed: file: and data: ones go on, anything else is
// aborted and listed in "network". Console errors and page errors are listed
// in "errors". Each canvas is read back and its non-blank pixels counted.
'use strict';
const path = require('path');
const { launch } = require('./chromium');

async function main() {
  const [file, shot] = process.argv.slice(2);
  const { ctx, close } = await launch();
  const out = { errors: [], network: [], canvases: [], texts: {} };
  try {
    const page = ctx.pages()[0] || await ctx.newPage();
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file:') || url.startsWith('data:')) return route.continue();
      out.network.push(url);
      return route.abort();
    });
    page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
    page.on('pageerror', (e) => out.errors.push(String(e)));
    await page.goto('file://' + path.resolve(file));
    await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
    out.canvases = await page.evaluate(() => Array.from(document.querySelectorAll('canvas')).map((c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      // ink: any pixel drawn; colour: a saturated one, which axes, grid and
      // labels (greys) are not, so only data makes it
      let ink = 0, colour = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i + 3] === 0) continue;
        ink++;
        if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) colour++;
      }
      const title = c.closest('.uplot') && c.closest('.uplot').querySelector('.u-title');
      const box = c.closest('.chart');
      return { title: title ? title.textContent : '', help: box ? box.title : '', width: c.width, height: c.height,
        ink, colour };
    }));
    out.texts = await page.evaluate(() => {
      const t = {};
      document.querySelectorAll('[data-key]').forEach((e) => { t[e.dataset.key] = e.dataset.value; });
      t.title = document.title;
      t.name = document.getElementById('run-name').textContent;
      t.command = document.getElementById('command').textContent;
      t.tags = document.getElementById('tags') ? document.getElementById('tags').textContent : '';
      t.scripts = document.querySelectorAll('script').length;
      t.injected = document.querySelectorAll('#app script, #app img, #app iframe, #app b.pwn').length;
      t.sections = Array.from(document.querySelectorAll('section h2')).map((h) => h.textContent);
      t.severities = Array.from(document.querySelectorAll('#findings span.sev')).map((e) => e.textContent);
      // each finding's rule and time range, as "Rule 0.0-1.6 s"
      t.ranges = Array.from(document.querySelectorAll('#findings tr')).filter((r) => r.querySelector('a.range'))
        .map((r) => r.cells[1].textContent + ' ' + r.querySelector('a.range').textContent);
      return t;
    });
    // a finding's time range zooms every chart to it
    out.zoom = await page.evaluate(() => {
      const a = document.querySelector('a.range');
      if (!a) return null;
      a.click();
      return true;
    });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: shot, fullPage: true });
  } catch (e) {
    out.errors.push('driver: ' + e.message);
  } finally {
    await close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stdout.write(JSON.stringify({ errors: ['driver: ' + e.message] }) + '\n'); });
