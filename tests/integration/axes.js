// The tick labels of every uPlot chart on a page, read back and judged, for
// the browser tests of both pages (chart_axes.js):
//
// How the labels are read: uPlot draws them on the canvas, so they are not in
// the DOM. hook() runs before the page's scripts and wraps the global uPlot
// constructor (the page's own script tag assigns it), keeping every chart the
// page makes in window.__uplots. collect() then reads, for each chart still on
// the page and each axis shown, uPlot's own record of what it drew: the tick
// positions (axis._splits, values of the scale) and the strings it passed to
// fillText (axis._values, what the axis' values() callback returned), with
// each string's width measured in the axis' font, the axis' width (_size),
// tick length and gap, and each tick's place on the canvas (valToPos).
//
// judge() checks one axis against the unit the test expects for it: every
// label parses back, in that unit, to the value of its tick; the labels rise
// strictly with the ticks and none repeats; a y axis is wide enough for its
// widest label (the report's fixed 70 px cut "19.1 MiB/s" to "9.1 MiB/s",
// read as 0, 9.1, 8.1); an x axis' labels neither overlap nor leave the
// canvas.
'use strict';

function hook() {
  window.__uplots = [];
  let wrapped;
  Object.defineProperty(window, 'uPlot', {
    configurable: true,
    get() { return wrapped; },
    set(U) {
      wrapped = function (opts, data, target) {
        const u = new U(opts, data, target);
        window.__uplots.push(u);
        return u;
      };
      Object.assign(wrapped, U);
      wrapped.prototype = U.prototype;
    },
  });
}

// runs in the page: one record per chart on the page
function collectInPage() {
  const m = document.createElement('canvas').getContext('2d');
  return (window.__uplots || []).filter((u) => u.root && u.root.isConnected).map((u) => {
    const t = u.root.querySelector('.u-title');
    const cv = u.root.querySelector('canvas');
    return {
      title: t ? t.textContent : '',
      width: cv.width / devicePixelRatio,
      height: cv.height / devicePixelRatio,
      axes: u.axes.map((a, i) => {
        const scale = u.scales[a.scale];
        // uPlot hides an axis whose scale has no range: no data in view
        if (a.show && !a._show) return { index: i, hidden: true, min: scale.min, max: scale.max };
        if (!a.show || !a._splits) return null;
        m.font = a.font[0];
        return {
          index: i,
          side: a.side,
          min: scale.min,
          max: scale.max,
          splits: a._splits.slice(),
          labels: (a._values || []).map((v) => (v == null ? '' : String(v))),
          widths: (a._values || []).map((v) => (v == null ? 0 : m.measureText(String(v)).width * a.font[2] / a.font[1])),
          pos: a._splits.map((s) => u.valToPos(s, a.scale) + (a.side % 2 ? u.bbox.top : u.bbox.left) / devicePixelRatio),
          size: a._size,
          tick: a.ticks && a.ticks.show !== false ? a.ticks.size : 0,
          gap: a.gap,
        };
      }),
    };
  });
}

async function collect(page) {
  return page.evaluate(collectInPage);
}

// ---- parsing a label back into a value of the axis' scale -----------------
const BIN = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4, PiB: 1024 ** 5, EiB: 1024 ** 6 };
const DUR = { ns: 1e-9, 'µs': 1e-6, ms: 1e-3, s: 1, min: 60, h: 3600 };
const SI = { k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
const NUM = '(-?\\d+(?:\\.\\d+)?(?:e[+-]\\d+)?)';

// unit: 'bytes', 'bytes/s', 'pct', 's' or 'ms' (durations in seconds or
// milliseconds), 'int', 'core' ("core N"), 'category' (any text), or a
// metric's own unit ('', 'count', 'W', 'C', '1/s'...), a count of it.
// Returns the value in the scale's unit, or null when the label is not one
// of that unit.
function parse(label, unit) {
  let m;
  if (unit === 'bytes' || unit === 'bytes/s') {
    const rate = unit === 'bytes/s' ? '/s' : '';
    m = label.match(new RegExp('^' + NUM + ' (B|KiB|MiB|GiB|TiB|PiB|EiB)' + rate.replace('/', '\\/') + '$'));
    return m ? Number(m[1]) * BIN[m[2]] : null;
  }
  if (unit === 's' || unit === 'ms') {
    m = label.match(new RegExp('^' + NUM + ' (ns|µs|ms|s|min|h)$'));
    return m ? Number(m[1]) * DUR[m[2]] / (unit === 'ms' ? 1e-3 : 1) : null;
  }
  if (unit === 'pct') {
    m = label.match(new RegExp('^' + NUM + ' %$'));
    return m ? Number(m[1]) : null;
  }
  if (unit === 'core') {
    m = label.match(/^core (\d+)$/);
    return m ? Number(m[1]) : null;
  }
  // counts: "12", "2.5 k", "2.5e-7", with the metric's unit after ("5 k W");
  // 'int': whole numbers
  const u = unit && unit !== 'count' && unit !== 'int' ? unit : '';
  m = label.match(new RegExp('^' + NUM + '(?: (k|M|G|T))?' + (u ? ' ' + u.replace(/[^\w]/g, '\\$&') : '') + '$'));
  if (!m) return null;
  const v = Number(m[1]) * (m[2] ? SI[m[2]] : 1);
  return unit === 'int' && Math.abs(v - Math.round(v)) > 1e-9 * Math.max(1, Math.abs(v)) ? null : v;
}

// problems of one axis ([] when none); unit as parse()'s
function judge(chart, ax, unit) {
  const bad = [];
  const where = `${chart.title} axis ${ax.index}`;
  if (ax.labels.length !== ax.splits.length) bad.push(`${where}: ${ax.labels.length} labels for ${ax.splits.length} ticks`);
  const shown = ax.labels.map((l, i) => ({ l, s: ax.splits[i], w: ax.widths[i], p: ax.pos[i] })).filter((x) => x.l !== '');
  const least = unit === 'core' || unit === 'category' ? 1 : 2;
  if (shown.length < least) bad.push(`${where}: ${shown.length} labels (${JSON.stringify(ax.labels)}) on ${ax.min}..${ax.max}`);
  const seen = new Set();
  shown.forEach((x) => {
    if (seen.has(x.l)) bad.push(`${where}: label ${JSON.stringify(x.l)} twice`);
    seen.add(x.l);
  });
  if (unit !== 'category' && unit !== 'core') {
    const vals = shown.map((x) => parse(x.l, unit));
    shown.forEach((x, i) => {
      if (vals[i] === null) { bad.push(`${where}: ${JSON.stringify(x.l)} is not a label of ${unit || 'a count'}`); return; }
      // the label is its tick's value: to the last digit written, so within
      // a hundredth of the step between ticks (or of the value, for one tick)
      const step = shown.length > 1 ? Math.abs(shown[1].s - shown[0].s) : Math.abs(x.s) || 1;
      if (Math.abs(vals[i] - x.s) > step * 0.01 + 1e-300) bad.push(`${where}: ${JSON.stringify(x.l)} reads ${vals[i]} at a tick of ${x.s}`);
      if (i && vals[i - 1] !== null && !(vals[i] > vals[i - 1])) bad.push(`${where}: ${JSON.stringify(shown[i - 1].l)} then ${JSON.stringify(x.l)}: not rising`);
    });
  } else if (unit === 'core') {
    const vals = shown.map((x) => parse(x.l, unit));
    if (vals.some((v) => v === null)) bad.push(`${where}: not "core N": ${JSON.stringify(ax.labels)}`);
  }
  if (ax.side % 2) {
    // a y axis: the label is drawn right-aligned (left axis) at size - tick - gap
    const room = ax.size - ax.tick - ax.gap;
    shown.forEach((x) => { if (x.w > room + 0.5) bad.push(`${where}: ${JSON.stringify(x.l)} is ${x.w.toFixed(1)} px in ${room} px`); });
  } else {
    let end = -Infinity, prev = null;
    shown.forEach((x) => {
      const a = x.p - x.w / 2, b = x.p + x.w / 2;
      if (a < -0.5 || b > chart.width + 0.5) bad.push(`${where}: ${JSON.stringify(x.l)} at ${a.toFixed(1)}..${b.toFixed(1)} leaves the ${chart.width} px canvas`);
      if (a < end + 2) bad.push(`${where}: ${JSON.stringify(prev)} and ${JSON.stringify(x.l)} overlap`);
      end = b; prev = x.l;
    });
  }
  return bad;
}

// every chart of a page judged: kinds(title) -> [x unit, y unit] or null for
// a chart the test does not know (itself a problem)
function judgeAll(charts, kinds) {
  const out = { titles: charts.map((c) => c.title), bad: [], labels: {} };
  charts.forEach((c) => {
    const k = kinds(c.title);
    if (!k) { out.bad.push(`${c.title}: a chart the test has no unit for`); return; }
    out.labels[c.title] = c.axes.map((a) => (a ? a.labels : null));
    c.axes.forEach((a, i) => {
      if (!a) { out.bad.push(`${c.title}: axis ${i} not drawn`); return; }
      if (a.hidden) {  // only a chart with nothing in view may hide its y axis
        if (i === 0 || a.min != null) out.bad.push(`${c.title}: axis ${i} hidden on ${a.min}..${a.max}`);
        return;
      }
      // whole numbers where the range holds two; less than a step apart,
      // fractions (a step-number axis zoomed into one step)
      const whole = k[i] !== 'int' || Math.floor(a.max) - Math.ceil(a.min) >= 1;
      out.bad.push(...judge(c, a, whole ? k[i] : 'count'));
    });
  });
  return out;
}

module.exports = { hook, collect, parse, judge, judgeAll };
