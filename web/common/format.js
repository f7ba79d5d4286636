/* strobe's figures as its two pages show them: the dashboard (served as
 * /assets/format.js) and the report (embedded before report.js) load this
 * one file, so a run's duration, a metric's mean or a finding's time range
 * reads the same on both. The terminal's are src/common/fmt.c; a finding's
 * range is written as it writes it (fmt_offset_range), so a range seen in
 * `strobe show` can be found on either page. */
var strobeFormat = (function () {
  'use strict';
  var NONE = '–';
  function missing(v) { return v === null || v === undefined || !isFinite(v); }

  /* A count or a rate in three digits and a unit of 1000. Each unit starts
   * where three digits of the one below round to 1000: 999960 is "1.00 M",
   * not toPrecision's "1.00e+3 k". Past T as 3.50e+15: a GPU's FLOP/s in G
   * read "3.50e+6 G", cut to ".00e+6 G" on an axis. */
  function num(v, digits) {
    if (missing(v)) return NONE;
    var a = Math.abs(v);
    if (a >= 999.5e12) return v.toExponential(2);
    if (a >= 999.5e9) return (v / 1e12).toPrecision(3) + ' T';
    if (a >= 999.5e6) return (v / 1e9).toPrecision(3) + ' G';
    if (a >= 999.5e3) return (v / 1e6).toPrecision(3) + ' M';
    if (a >= 1e4) return (v / 1e3).toPrecision(3) + ' k';
    if (a >= 100 || v === Math.round(v)) return String(Math.round(v * 10) / 10);
    return v.toPrecision(digits || 3);
  }

  /* A length of time in seconds. A figure that rounds to its next unit is
   * written in it: 0.99996 s is "1.00 s" (not "1.00e+3 ms"), 119.7 s
   * "2m 0s" (not "1m 60s"), 3599.6 s "1h 0m". */
  function dur(s) {
    if (missing(s)) return NONE;
    var a = Math.abs(s);
    if (a === 0) return '0';
    if (a < 999.5e-6) return (s * 1e6).toPrecision(3) + ' µs';
    if (a < 999.5e-3) return (s * 1e3).toPrecision(3) + ' ms';
    if (a < 59.95) return s.toFixed(a < 9.995 ? 2 : 1) + ' s';
    var sign = s < 0 ? '-' : '', t = Math.round(a), m = Math.round(a / 60);
    if (t < 3600) return sign + Math.floor(t / 60) + 'm ' + (t % 60) + 's';
    return sign + Math.floor(m / 60) + 'h ' + (m % 60) + 'm';
  }

  /* Bytes in units of 1024, three digits. A unit starts where the one below
   * rounds to 1024 (1023.7 MiB is "1.00 GiB", not "1024 MiB"); 1000 to 1023
   * of a unit in whole numbers (1010 MiB, not toPrecision's "1.01e+3 MiB"). */
  function bytes(v) {
    if (missing(v)) return NONE;
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, a = Math.abs(v);
    while (a >= 1023.5 && i < u.length - 1) { a /= 1024; v /= 1024; i++; }
    return (i && a < 999.5 ? v.toPrecision(3) : String(Math.round(v))) + ' ' + u[i];
  }

  function pct(v) { return missing(v) ? NONE : num(v) + ' %'; }

  /* A value of a metric of the unit the store gives it. */
  function byUnit(v, unit) {
    if (missing(v)) return NONE;
    if (unit === 'bytes') return bytes(v);
    if (unit === 'bytes/s') return bytes(v) + '/s';
    if (unit === 'pct') return pct(v);
    if (unit === 'ms') return dur(v / 1e3);
    if (unit === 's') return dur(v);
    return num(v) + (unit && unit !== 'count' ? ' ' + unit : '');
  }

  /* Tenths of a second as C's printf writes them: toFixed rounds an exact
   * tie up, printf to even (12.25 is "12.2"). The only exact ties are odd
   * multiples of 0.25 (a tenth's half, 1/20, is a power of two's fraction
   * only when 5 divides the numerator), and x * 4 is exact. */
  function tenths(x) {
    var q = x * 4;
    if (q !== Math.floor(q) || q % 2 !== 1) return x.toFixed(1);
    var t = Math.floor(x * 10);
    return ((t % 2 ? t + 1 : t) / 10).toFixed(1);
  }
  function clock(s, hours) {
    var mm = Math.floor(s / 60) % 60, ss = s % 60, two = function (x) { return (x < 10 ? '0' : '') + x; };
    return hours ? Math.floor(s / 3600) + ':' + two(mm) + ':' + two(ss) : Math.floor(s / 60) + ':' + two(ss);
  }
  /* A range of a run's time, seconds from its start, read as a clock:
   * "0.0-1.6 s" under a minute, "0:45-2:10" past it, "1:00:02-1:02:00"
   * past an hour; as fmt_offset_range writes it. */
  function offsetRange(a, b) {
    if (missing(a) || missing(b)) return '-';
    a = a > 0 ? a : 0;   /* a finding never starts before its run */
    b = b > a ? b : a;
    if (b < 59.95) return tenths(a) + '-' + tenths(b) + ' s';
    var ra = Math.round(a), rb = Math.round(b), hours = rb >= 3600;
    return clock(ra, hours) + '-' + clock(rb, hours);
  }

  /* ---- chart axes ---------------------------------------------------------
   * The ticks of a chart's axis, for both pages' uPlot charts. Every label of
   * one axis is written in one unit, chosen from the scale's range (bytes in
   * B, KiB, MiB... of 1024; durations in ns, µs, ms, s, min or h; counts and
   * other units in k, M, G, T of 1000, and as 2.5e-7 / 3.5e+15 below 0.001
   * and past T), and the ticks are round numbers *of that unit* (1, 2, 2.5 or
   * 5 times a power of ten; 15 and 30 s or min too), written with as many
   * decimals as the step needs. So labels read in order and never repeat:
   * decimal ticks written in binary units with three digits had read
   * "19.1 MiB/s, 38.1 MiB/s", too wide for the report's fixed axis, and
   * clipped on the canvas to "9.1", "8.1" (the disk chart's "0, 7.7 MiB/s,
   * 5.4 MiB/s"). axisSize() makes a y axis as wide as its widest label.
   *
   * ticks(unit, lo, hi, minIncr) is the plan for a scale from lo to hi whose
   * ticks must be at least minIncr apart: {splits, labels, incr, name}. unit
   * is a metric's unit ('bytes', 'bytes/s', 'pct', 'ms', 's', 'count', 'W',
   * ...) or 'int' for whole numbers (steps, runs, findings). */
  var BIN = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  var SI = ['', 'k', 'M', 'G', 'T'];

  /* The unit the labels of an axis over [lo, hi] are written in: div is its
   * size in the values' own unit. The largest that holds the values, or,
   * zoomed into a narrow range far from zero, the largest whose step is not
   * under a thousandth of it: "50000.2 s", not "13.88894 h". */
  function tickUnit(unit, lo, hi, minIncr) {
    var a = Math.max(Math.abs(lo), Math.abs(hi)), i;
    if (!isFinite(a)) a = 0;
    if (minIncr > 0 && isFinite(minIncr)) a = Math.min(a, minIncr * 1000);
    if (unit === 'bytes' || unit === 'bytes/s') {
      for (i = 0; i < BIN.length - 1 && a >= Math.pow(1024, i + 1);) i++;
      return {div: Math.pow(1024, i), name: BIN[i] + (unit === 'bytes/s' ? '/s' : ''), whole: i === 0};
    }
    if (unit === 'ms' || unit === 's') {
      var f = unit === 'ms' ? 1e-3 : 1, s = a * f;  /* f: seconds in one of the values' unit */
      var d = s >= 5 * 3600 ? [3600, 'h', 'h'] : s >= 300 ? [60, 'min', 'sexa'] : s >= 1 || s === 0 ? [1, 's', 'sexa'] :
        s >= 1e-3 ? [1e-3, 'ms'] : s >= 1e-6 ? [1e-6, 'µs'] : [1e-9, 'ns'];
      return {div: d[0] / f, name: d[1], mults: d[2]};
    }
    var suffix = unit && unit !== 'count' && unit !== 'int' && unit !== 'pct' ? unit : '';
    if (unit === 'pct') suffix = '%';
    if (a >= 999.5e12 || (a > 0 && a < 1e-3)) return {div: 1, name: suffix, exp: true, whole: unit === 'int'};
    i = a >= 1e4 && unit !== 'pct' ? Math.min(4, Math.floor(Math.log10(a) / 3)) : 0;
    return {div: Math.pow(1000, i), name: SI[i] + (SI[i] && suffix ? ' ' : '') + suffix, zero: suffix,
      whole: unit === 'int'};
  }

  /* Round steps of the display unit, ten times M/10 a power of ten each:
   * {m10: M, n}: the step is M * 10^(n-1). */
  function steps(u, lo10, hi10) {
    var out = [];
    for (var n = lo10; n <= hi10; n++) {
      var ms = [10, 20, 25, 50];
      if (u.mults === 'sexa' && n >= 1) ms = [10, 15, 20, 30, 60];
      if (u.mults === 'h' && n >= 0) ms = [10, 20, 30, 60];
      ms.forEach(function (m) {
        var v = Number(m + 'e' + (n - 1));
        if (!u.whole || v === Math.round(v)) out.push({m10: m, n: n, v: v});  /* whole: 1, 2, 5, 10, 20, 25 ... */
      });
    }
    return out.sort(function (a, b) { return a.v - b.v; });
  }
  /* k steps as a number of the display unit: exact decimal, no k * 0.1 drift */
  function stepValue(st, k) { return Number((k * st.m10) + 'e' + (st.n - 1)); }
  function decimals(st) { return Math.max(0, (st.m10 % 10 ? 1 : 0) - st.n); }

  function ticks(unit, lo, hi, minIncr) {
    var u = tickUnit(unit, lo, hi, minIncr), div = u.div;
    /* whole numbers (bytes under a KiB, counts of things) unless no whole one is in range */
    if (u.whole && Math.floor(hi / div) - Math.ceil(lo / div) < 1) u.whole = false;
    var out = {splits: [], labels: [], incr: 0, name: u.name};
    if (!isFinite(lo) || !isFinite(hi) || hi < lo) return out;
    var a = lo / div, b = hi / div, want = minIncr / div;
    if (hi === lo) {   /* a scale of one value: that value, as precise as a tick's */
      out.splits.push(lo);
      out.labels.push(lo === 0 ? '0' + (u.name ? ' ' + u.name : '') :
        (u.exp ? a.toExponential(6).replace(/\.?0+e/, 'e') : String(Number(a.toPrecision(7)))) + (u.name ? ' ' + u.name : ''));
      return out;
    }
    if (!(want > 0) || !isFinite(want)) want = (b - a) / 4 || Math.abs(a) || 1;
    /* at most 400 ticks however small the space asked for */
    want = Math.max(want, (b - a) / 400, u.whole ? 1 : 0);
    var e = Math.floor(Math.log10(want)), all = steps(u, e - 2, e + 2), j = 0;
    while (all[j].v < want * (1 - 1e-9)) j++;
    /* two ticks at least: a smaller step, down to a quarter of the space,
     * where one step leaves a single tick in range */
    function count(x) { return Math.floor(b / x.v + 1e-9) - Math.ceil(a / x.v - 1e-9) + 1; }
    while (count(all[j]) < 2 && j > 0 && all[j - 1].v >= want / 4) j--;
    var st = all[j];
    out.incr = st.v * div;
    var k0 = Math.ceil(a / st.v - 1e-9), k1 = Math.floor(b / st.v + 1e-9);
    var fmt = tickFormat(u, st);
    for (var k = k0; k <= k1; k++) {
      var v = stepValue(st, k) * div;
      out.splits.push(v === 0 ? 0 : v);
      out.labels.push(fmt(k));
    }
    return out;
  }
  /* The label of the k-th step from zero. */
  function tickFormat(u, st) {
    var sfx = u.name ? ' ' + u.name : '', dec = decimals(st), lsd = st.n - (st.m10 % 10 ? 1 : 0);
    var zero = '0' + (u.zero !== undefined ? (u.zero ? ' ' + u.zero : '') : sfx);   /* "0", not "0 k" */
    return function (k) {
      var x = stepValue(st, k);
      if (x === 0) return zero;
      if (!u.exp) return x.toFixed(dec) + sfx;
      var e = Number(x.toExponential().split('e')[1]);
      return x.toExponential(Math.max(0, e - lsd)) + sfx;
    };
  }

  /* uPlot's axis options for values of a unit (see ticks above). uPlot's own
   * increments are decimal; its incrs are replaced by one step too large to
   * miss, so that the splits function learns from (incr, space) how many
   * pixels a unit of the scale takes, and picks its own step from that. */
  function axis(unit, extra) {
    function plan(u, i, incr, space) {
      var ax = u.axes[i], sc = u.scales[ax.scale];
      return ticks(unit, sc.min, sc.max, ax._space * incr / space);
    }
    var o = {
      /* a horizontal axis' ticks as far apart as its widest label and a gap */
      space: function (u, i, mn, mx, dim) {
        if (u.axes[i].side % 2) return 30;
        var w = 0;
        ticks(unit, mn, mx, 60 * (mx - mn) / dim).labels.forEach(function (l) { w = Math.max(w, textWidth(u, i, l)); });
        return Math.max(50, Math.ceil(w) + 20);
      },
      incrs: function (u, i, mn, mx) { return [Math.max(5, Math.abs(mx - mn) * 1e6, Math.abs(mx) * 1e3)]; },
      splits: function (u, i, mn, mx, incr, space) { return plan(u, i, incr, space).splits; },
      values: function (u, splits, i, space, incr) {
        var p = plan(u, i, incr, space), ax = u.axes[i];
        return splits.map(function (v) {
          var j = p.splits.indexOf(v), l = j < 0 ? '' : p.labels[j];
          /* a horizontal axis' label centred on a tick at the plot's right
           * edge would stick out of the canvas: left out */
          if (l && ax.side % 2 === 0 && u.valToPos(v, ax.scale) + u.bbox.left / devicePixelRatio +
              textWidth(u, i, l) / 2 > u.width) l = '';
          return l;
        });
      }
    };
    Object.keys(extra || {}).forEach(function (k) { o[k] = extra[k]; });
    return o;
  }

  /* A y axis as wide as its widest label, at least min px: a fixed width
   * cut the first digits off "19.1 MiB/s" or "-1.23e+18". */
  var measurer = null;
  function textWidth(u, i, text) {
    if (!measurer) measurer = document.createElement('canvas').getContext('2d');
    var f = u.axes[i].font;   /* [font at the device's pixel ratio, its px, its CSS px] */
    measurer.font = f[0];
    return measurer.measureText(String(text)).width * f[2] / f[1];
  }
  function axisSize(min) {
    return function (u, values, i) {
      var ax = u.axes[i], w = 0;
      (values || []).forEach(function (v) { if (v != null && v !== '') w = Math.max(w, textWidth(u, i, v)); });
      return Math.max(min || 0, Math.ceil(w) + (ax.ticks && ax.ticks.show !== false ? ax.ticks.size : 0) + ax.gap + 6);
    };
  }

  /* Labels of a horizontal axis at fixed splits (a sweep's parameter values)
   * left out where they would overlap the one before: '' draws nothing. */
  function thin(u, i, splits, labels) {
    var ax = u.axes[i], end = -Infinity;
    return labels.map(function (l, j) {
      var x = u.valToPos(splits[j], ax.scale), w = textWidth(u, i, l);
      if (x - w / 2 < end + 8) return '';
      end = x + w / 2;
      return l;
    });
  }

  /* Labels for ticks at given values (a sweep's parameter values): as num()
   * writes them, with more digits where two would read the same. */
  function distinctLabels(vs) {
    var out = vs.map(num);
    for (var p = 4; p <= 17 && out.some(function (x, i) { return i && x === out[i - 1]; }); p++)
      out = vs.map(function (v) { return missing(v) ? NONE : String(Number(v.toPrecision(p))); });
    return out;
  }

  /* A metric's one-line help from the catalog (build/gen/metrics.js, loaded
   * beside this file), for a tooltip; a family member (app.loss) takes its
   * family's (app.*). '' where the catalog is not loaded or lacks the name. */
  function metricHelp(name) {
    if (typeof strobeMetrics === 'undefined' || !name) return '';
    var family = name.slice(0, name.indexOf('.') + 1) + '*';
    var keys = Object.keys(strobeMetrics);
    for (var pass = 0; pass < 2; pass++)
      for (var i = 0; i < keys.length; i++)
        if (strobeMetrics[keys[i]].name === (pass ? family : name)) return strobeMetrics[keys[i]].help;
    return '';
  }

  /* A run of several nodes (a job, an import of several SageMaker nodes)
   * has node=NAME among each series' labels. labelValue gives a label's
   * value, its %XX decoded (src/common/label.h), or null; labelsLess the
   * labels without that key, as written. */
  function labelValue(labels, key) {
    var ps = (labels || '').split(',');
    for (var i = 0; i < ps.length; i++) {
      var eq = ps[i].indexOf('=');
      if (eq >= 0 && ps[i].slice(0, eq) === key) {
        try { return decodeURIComponent(ps[i].slice(eq + 1)); } catch (e) { return ps[i].slice(eq + 1); }
      }
    }
    return null;
  }
  function labelsLess(labels, key) {
    return (labels || '').split(',').filter(function (p) { return p && p.slice(0, p.indexOf('=')) !== key; }).join(',');
  }

  /* A heatmap drawn on a uPlot chart of options o (seconds on x) from src,
   * read at each draw (a page may put the cells of a zoomed range in it):
   * src.names, a row per name, names[0] at the top; src.rows, each row's
   * cells, src.width seconds wide from src.start, a share of 0..100 (%)
   * coloured from pale blue to dark red; null cells stay blank. The y axis
   * names every row that fits. Returns the chart's data: x at the cells'
   * middles, no y series (heatData gives it again for new cells). */
  function heatColour(v) {
    v = Math.max(0, Math.min(100, v)) / 100;
    return 'hsl(' + (220 - 220 * v) + ',75%,' + (92 - 45 * v) + '%)';
  }
  /* A heatmap's height for n rows: rows a label tall while few, thin when many. */
  function heatHeight(n) { return 60 + n * (n <= 8 ? 22 : n <= 64 ? 8 : 2); }
  function heatData(src) {
    var ncols = src.rows.reduce(function (m, r) { return Math.max(m, r.length); }, 0), xs = [];
    for (var i = 0; i < ncols; i++) xs.push(src.start + (i + 0.5) * src.width);
    return [xs, xs.map(function () { return null; })];
  }
  function heatmap(o, src) {
    var rowsOf = function () { return src.names.length; };
    o.scales.y = {range: function () { return [0, Math.max(1, rowsOf())]; }};
    /* row k (from the top) lies between n - k - 1 and n - k on the y scale;
     * a label in its middle, every step-th row (uPlot's increment for 14 px,
     * rounded up to whole rows) */
    o.axes[1] = {size: axisSize(50), space: 14,
      splits: function (u, i, mn, mx, incr) {
        var out = [], n = rowsOf(), step = Math.max(1, Math.ceil(incr - 1e-9));
        for (var k = 0; k < n; k += step) out.push(n - k - 0.5);
        return out;
      },
      values: function (u, v) {
        return v.map(function (y) { var k = rowsOf() - 1 - Math.floor(y); return src.names[k] !== undefined ? src.names[k] : ''; });
      }};
    o.series.push({label: 'rows', stroke: 'transparent', points: {show: false}, paths: function () { return null; }});
    o.legend = {show: false};
    o.hooks = o.hooks || {};
    o.hooks.draw = (o.hooks.draw || []).concat([function (u) {
      var ctx = u.ctx, bb = u.bbox, n = rowsOf(), rowH = bb.height / Math.max(1, n), w = src.width;
      ctx.save();
      ctx.beginPath(); ctx.rect(bb.left, bb.top, bb.width, bb.height); ctx.clip();
      for (var k = 0; k < n; k++) {
        var m = src.rows[k] || [], y = bb.top + k * rowH;
        var i0 = Math.max(0, Math.floor((u.scales.x.min - src.start) / w) - 1),
          i1 = Math.min(m.length, Math.ceil((u.scales.x.max - src.start) / w) + 1);
        for (var i = i0; i < i1; i++) {
          if (m[i] === null || m[i] === undefined) continue;
          var x0 = u.valToPos(src.start + i * w, 'x', true), x1 = u.valToPos(src.start + (i + 1) * w, 'x', true);
          ctx.fillStyle = heatColour(m[i]);
          ctx.fillRect(x0, y, Math.max(1, x1 - x0 + 0.5), Math.max(1, rowH - (rowH > 3 ? 0.5 : 0)));
        }
      }
      ctx.restore();
    }]);
    return heatData(src);
  }
  /* The row and cell of src under the cursor of a heatmap's chart, or null. */
  function heatAt(u, src) {
    var l = u.cursor.left, t = u.cursor.top, n = src.names.length;
    if (!(l >= 0) || !(t >= 0) || !n) return null;
    var k = Math.floor(t / (u.bbox.height / devicePixelRatio / n)), x = u.posToVal(l, 'x');
    var i = Math.floor((x - src.start) / src.width);
    if (k < 0 || k >= n || i < 0) return null;
    var v = (src.rows[k] || [])[i];
    return {row: k, name: src.names[k], t: x, value: v === undefined ? null : v};
  }

  return {NONE: NONE, num: num, metricHelp: metricHelp, dur: dur, bytes: bytes, pct: pct, byUnit: byUnit, offsetRange: offsetRange,
    ticks: ticks, axis: axis, axisSize: axisSize, textWidth: textWidth, thin: thin, distinctLabels: distinctLabels,
    labelValue: labelValue, labelsLess: labelsLess, heatmap: heatmap, heatData: heatData, heatHeight: heatHeight, heatColour: heatColour,
    heatAt: heatAt};
})();
