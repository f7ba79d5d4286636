// strobe's dashboard: one page, six views (runs, run, compare, sweep, and
// strobe sweep's campaigns and campaign), all
// of their state in the URL's hash (#/view/arg?key=value...), so a reload or
// a shared link gives the same view. Data comes from the JSON API of
// `strobe serve` (docs/api.md); charts are uPlot's. Every string from the
// store goes into the page as text (textContent / text nodes), never as HTML.
'use strict';
(function () {
  var app = document.getElementById('app');
  var PAL = ['#2f6fdb', '#e07b00', '#2e9d57', '#c62828', '#7b4fd6', '#0097a7', '#c2185b',
    '#6d8b00', '#8d6e63', '#455a64', '#f4511e', '#3949ab', '#00897b', '#d81b60', '#5e35b1', '#7cb342'];
  var SEV = {high: '#c62828', medium: '#e07b00', low: '#c9a400', warning: '#e07b00', info: '#5d6678'};
  var PHASES = ['data', 'forward', 'backward', 'optimizer', 'comm', 'other'];
  var PHASE_COL = {data: '#e07b00', forward: '#2f6fdb', backward: '#7b4fd6', optimizer: '#2e9d57',
    comm: '#c62828', other: '#9aa3b2'};
  var M = strobeMetrics; /* the catalog (src/common/metrics.def), which names the metrics */
  var DEFAULT_METRICS = [M.CPU_UTIL, M.PROC_CPU, M.PROC_RSS_BYTES, M.GPU_UTIL].map(function (m) {
    return m.name;
  });

  /* ---- DOM helpers: text only ------------------------------------------ */
  function h(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
        else if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k === 'value') e.value = v;
        else if (k === 'checked') e.checked = !!v;
        else if (k === 'dataset') Object.keys(v).forEach(function (d) { e.dataset[d] = v[d]; });
        else if (k !== 'style' && k !== 'innerHTML') e.setAttribute(k, v === true ? '' : String(v));
      });
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function section(title, lead) {
    return h('section', null, h('h2', {text: title}), lead ? h('p', {class: 'lead', text: lead}) : null);
  }
  function option(value, label, selected) {
    var o = h('option', {value: value, text: label});
    if (selected) o.selected = true;
    return o;
  }

  /* ---- formatting: web/common/format.js, shared with the report ------ */
  var F = strobeFormat, num = F.num, dur = F.dur, bytes = F.bytes, byUnit = F.byUnit, pct = F.pct;
  function date(ns) {
    if (!ns) return '–';
    var d = new Date(ns / 1e6), p = function (x) { return (x < 10 ? '0' : '') + x; };
    return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + ' ' +
      p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
  }
  function seriesKey(m) { return m.labels ? m.name + '{' + m.labels + '}' : m.name; }
  function shortId(id) { return id ? id.slice(0, 8) : ''; }

  /* ---- API ------------------------------------------------------------- */
  function api(path) {
    return fetch(path, {headers: {Accept: 'application/json'}}).then(function (r) {
      if (r.ok) return r.json();
      return r.json().catch(function () { return {}; }).then(function (b) {
        var e = new Error(b.error || ('HTTP ' + r.status));
        e.status = r.status;
        throw e;
      });
    });
  }
  function qs(o) {
    var p = new URLSearchParams();
    Object.keys(o).forEach(function (k) {
      var v = o[k];
      if (v === null || v === undefined || v === '') return;
      if (Array.isArray(v)) v.forEach(function (x) { p.append(k, x); }); else p.append(k, v);
    });
    var s = p.toString();
    return s ? '?' + s : '';
  }
  function runPath(id) { return '/api/runs/' + encodeURIComponent(id); }

  /* ---- routing: #/view/arg?query --------------------------------------- */
  var route = null;     /* {view, arg, q} */
  var cleanups = [];    /* timers and charts of the current view */
  var seq = 0;          /* bumps on every navigation: stale answers are dropped */
  function parseHash() {
    var s = location.hash.replace(/^#\/?/, ''), qi = s.indexOf('?');
    var path = qi < 0 ? s : s.slice(0, qi), q = new URLSearchParams(qi < 0 ? '' : s.slice(qi + 1));
    var parts = path.split('/');
    return {view: parts[0] || 'runs', arg: parts[1] ? decodeArg(parts.slice(1).join('/')) : '', q: q};
  }
  /* A link typed by hand may hold a bare '%' (a run named "lr=50%"): taken
   * as it is, not thrown on, which left a blank page. */
  function decodeArg(s) {
    try { return decodeURIComponent(s); } catch (e) { return s; }
  }
  function hashFor(view, arg, q) {
    var s = q && q.toString();
    return '#/' + view + (arg ? '/' + encodeURIComponent(arg) : '') + (s ? '?' + s : '');
  }
  /* A view's own state change: the URL follows, the view redraws itself. */
  function setState(q) {
    route.q = q;
    history.replaceState(null, '', hashFor(route.view, route.arg, q));
    drawnFor();
  }
  function go(view, arg, q) { location.hash = hashFor(view, arg, q); }
  function onCleanup(f) { cleanups.push(f); }
  function render() {
    cleanups.forEach(function (f) { try { f(); } catch (e) { /* already gone */ } });
    cleanups = [];
    charts = [];
    seq++;
    route = parseHash();
    drawnFor();
    clear(app);
    document.querySelectorAll('nav a[data-nav]').forEach(function (a) {
      a.classList.toggle('active', a.dataset.nav === (route.view === 'campaign' ? 'campaigns' : route.view));
    });
    var views = {runs: runsView, run: runView, compare: compareView, sweep: sweepView,
      campaigns: campaignsView, campaign: campaignView};
    (views[route.view] || runsView)(seq);
  }
  function alive(token) { return token === seq; }
  function failBox(parent, what, e) {
    parent.appendChild(h('div', {class: 'error', text: 'Cannot load ' + what + ': ' + e.message}));
  }
  /* The URL the page is drawn for: a test driver's wait for data-ready='1'
   * also waits for this to be the URL it went to, since a hash change's
   * render comes a task after the navigation, while data-ready still says
   * the previous view is drawn. */
  function drawnFor() { document.body.dataset.hash = location.hash; }
  function ready() { document.body.dataset.ready = '1'; }
  function busy() { document.body.dataset.ready = '0'; }

  /* ---- uPlot charts ---------------------------------------------------- */
  var charts = [];
  function chartWidth(box) { return Math.max(320, Math.floor((box || app).clientWidth) - 4); }
  window.addEventListener('resize', function () {
    clearTimeout(window.__strobeResize);
    window.__strobeResize = setTimeout(function () {
      charts.forEach(function (c) {
        if (c.u && c.box) c.u.setSize({width: chartWidth(c.box), height: c.u.height});
      });
    }, 150);
  });
  function newChart(opts, data, box, extra) {
    var u = new uPlot(opts, data, box);
    var c = Object.assign({u: u, box: box}, extra || {});
    charts.push(c);
    onCleanup(function () { u.destroy(); });
    return c;
  }
  /* Axes: ticks, labels and a y axis as wide as its widest label are
   * web/common/format.js's axis() and axisSize(), as in the report. */
  var axisSize = F.axisSize;
  /* A y range from 0 to a little above the highest value shown. */
  function fromZero(u, mn, mx) { return [Math.min(0, mn), mx > 0 ? mx * 1.08 : 1]; }
  /* Findings shaded on a chart's time axis, under the series. */
  function shadeHook(getRanges) {
    return function (u) {
      var rs = getRanges(), ctx = u.ctx, bb = u.bbox;
      if (!rs || !rs.length) return;
      ctx.save();
      ctx.beginPath(); ctx.rect(bb.left, bb.top, bb.width, bb.height); ctx.clip();
      rs.forEach(function (r) {
        var x0 = u.valToPos(r.a, 'x', true), x1 = u.valToPos(r.b, 'x', true), c = SEV[r.severity] || SEV.info;
        var w = Math.max(2, x1 - x0);
        ctx.fillStyle = c + (r.whole ? '0c' : '22');
        ctx.fillRect(x0, bb.top, w, bb.height);
        ctx.fillStyle = c + (r.whole ? '55' : 'cc');
        ctx.fillRect(x0, bb.top, w, (r.whole ? 2 : 4) * devicePixelRatio);
      });
      ctx.restore();
    };
  }

  /* ====================================================================== */
  /* runs view                                                               */
  /* ====================================================================== */
  var COLS = [
    {k: 'name', label: 'name', sort: 'name'},
    {k: 'experiment', label: 'experiment', sort: 'experiment'},
    {k: 'workload', label: 'workload', sort: 'workload'},
    {k: 'status', label: 'status', sort: 'status'},
    {k: 'start_ns', label: 'start', sort: 'start'},
    {k: 'duration_s', label: 'duration', sort: 'duration', num: true, f: dur},
    {k: 'steps', label: 'steps', sort: 'steps', num: true, f: function (v) { return v === null ? '–' : String(v); }},
    {k: 'step_p50_s', label: 'step p50', sort: 'step_p50', num: true, f: dur},
    {k: 'samples_per_s', label: 'samples/s', sort: 'samples_per_s', num: true, f: num},
    {k: 'cpu_util_pct', label: 'mean CPU', sort: 'cpu_util', num: true, f: pct},
    {k: 'gpu_util_pct', label: 'mean GPU util', sort: 'gpu_util', num: true, f: pct},
    {k: 'findings', label: 'findings', sort: 'findings', num: true, f: function (v) { return v === null ? '–' : String(v); }},
    /* a job of many nodes (cluster mode): its node count; sorted here */
    {k: 'nodes', label: 'nodes', num: true, f: function (v) { return v === null || v === undefined ? '–' : String(v); }}
  ];
  /* A view of something still running (a run, a campaign) loads again
   * after this long, until it ends. */
  var REFRESH_MS = 5000;
  var selected = [];   /* run ids ticked for compare, kept across views */
  var PAGE = 1000;     /* runs listed at first, and added by "Show more" (the API's default limit) */

  function runsView(token) {
    var q = route.q;
    var top = h('div', {class: 'crumbs'});
    var filters = h('div', {class: 'filters'});
    var tools = h('div', {class: 'toolbar'});
    var tableBox = h('div', {class: 'tablebox'});
    app.appendChild(h('section', null, top, filters, tools, tableBox));
    var facets = {experiments: [], workloads: []}, rows = [], total = 0, timer = null;

    function crumbs() {
      clear(top);
      var e = q.get('experiment'), w = q.get('workload');
      add(top, h('a', {href: '#/runs', text: 'All runs'}));
      if (e) add(top, [h('span', {class: 'sep', text: '›'}), h('a', {href: hashFor('runs', '', new URLSearchParams({experiment: e})), text: e})]);
      if (w) add(top, [h('span', {class: 'sep', text: '›'}), h('span', {text: 'workload ' + w})]);
      if (e) add(top, h('a', {class: 'btn small', href: hashFor('sweep', '', new URLSearchParams({experiment: e})), text: 'Sweep this experiment'}));
      if (w) add(top, h('a', {class: 'btn small', href: hashFor('compare', '', new URLSearchParams({workload: w})), text: 'Compare this workload'}));
    }
    function set(k, v) {
      var n = new URLSearchParams(q);
      if (v) n.set(k, v); else n.delete(k);
      q = n; setState(n); crumbs(); load();
    }
    function selectBox(k, label, values) {
      var s = h('select', {id: 'f-' + k, onchange: function () { set(k, s.value); }},
        option('', 'any ' + label, !q.get(k)));
      values.forEach(function (v) { s.appendChild(option(v, v, q.get(k) === v)); });
      if (q.get(k) && values.indexOf(q.get(k)) < 0) s.appendChild(option(q.get(k), q.get(k), true));
      return h('label', null, h('span', {text: label}), s);
    }
    function textBox(k, label, ph) {
      var t;
      var i = h('input', {id: 'f-' + k, type: 'search', placeholder: ph, value: q.get(k) || '',
        oninput: function () { clearTimeout(t); t = setTimeout(function () { set(k, i.value.trim()); }, 300); }});
      return h('label', null, h('span', {text: label}), i);
    }
    function drawFilters() {
      clear(filters);
      add(filters, [
        selectBox('experiment', 'experiment', facets.experiments),
        selectBox('workload', 'workload', facets.workloads),
        textBox('tag', 'tag', 'key or key:value'),
        textBox('param', 'parameter', 'key or key:value'),
        selectBox('status', 'status', ['running', 'finished', 'failed', 'crashed', 'killed', 'stopped', 'lost'])
      ]);
    }
    function sortKey() { return q.get('sort') || '-start'; }
    var loads = 0;   /* the answer of the latest load only: a slow sort must not land after a later one */
    function load() {
      var mine = ++loads;
      busy();
      var s = sortKey(), desc = s[0] === '-', key = desc ? s.slice(1) : s;
      var server = COLS.some(function (c) { return c.sort === key; });
      /* the server sorts every run, then sends a page of them: 1000, more
       * as "Show more" asks (limit= in the URL) */
      var a = {experiment: q.get('experiment'), workload: q.get('workload'), status: q.get('status'),
        tag: q.get('tag'), param: q.get('param'), sort: server ? s : '-start', limit: q.get('limit')};
      api('/api/runs' + qs(a)).then(function (d) {
        if (!alive(token) || mine !== loads) return;
        rows = d.runs; total = d.total;
        if (!server) {
          rows = rows.slice().sort(function (x, y) {
            var u = x[key], v = y[key];
            if (u === v) return 0;
            if (u === null || u === undefined) return 1;
            if (v === null || v === undefined) return -1;
            return (u < v ? -1 : 1) * (desc ? -1 : 1);
          });
        }
        table();
        clearTimeout(timer);
        if (rows.some(function (r) { return r.status === 'running'; })) timer = setTimeout(load, REFRESH_MS);
        ready();
      }).catch(function (e) { if (alive(token) && mine === loads) { clear(tableBox); failBox(tableBox, 'the runs', e); ready(); } });
    }
    onCleanup(function () { clearTimeout(timer); });
    function compareBtn() {
      clear(tools);
      var n = selected.length;
      add(tools, [
        h('button', {id: 'compare-btn', class: 'primary', disabled: n < 2 ? true : null, onclick: function () {
          go('compare', '', new URLSearchParams({runs: selected.join(',')}));
        }, text: n < 2 ? 'Compare (tick 2 or more)' : 'Compare ' + n + ' runs'}),
        n ? h('button', {onclick: function () { selected = []; table(); }, text: 'Clear selection'}) : null,
        h('span', {class: 'muted', id: 'runs-count', text: rows.length + (total > rows.length ? ' of ' + total : '') + ' run' + (total === 1 ? '' : 's')}),
        total > rows.length ? h('button', {id: 'more-runs', onclick: function () { set('limit', String(Math.min(100000, rows.length + PAGE))); },
          text: 'Show ' + Math.min(PAGE, total - rows.length) + ' more'}) : null
      ]);
    }
    function table() {
      compareBtn();
      clear(tableBox);
      var s = sortKey(), desc = s[0] === '-', key = desc ? s.slice(1) : s;
      var head = h('tr', null, h('th', {class: 'sel'}));
      COLS.forEach(function (c) {
        var sk = c.sort || c.k, on = sk === key;
        head.appendChild(h('th', {class: (c.num ? 'num ' : '') + 'sortable' + (on ? ' sorted' : ''), dataset: {sort: sk},
          onclick: function () { set('sort', on && !desc ? '-' + sk : sk); }},
        c.label, on ? (desc ? ' ▼' : ' ▲') : ''));
      });
      var body = h('tbody');
      rows.forEach(function (r) {
        var tr = h('tr', {dataset: {id: r.id}});
        var cb = h('input', {type: 'checkbox', class: 'pick', checked: selected.indexOf(r.id) >= 0,
          'aria-label': 'select run ' + r.name, onchange: function () {
            var i = selected.indexOf(r.id);
            if (cb.checked && i < 0) selected.push(r.id);
            if (!cb.checked && i >= 0) selected.splice(i, 1);
            compareBtn();
          }});
        tr.appendChild(h('td', {class: 'sel'}, cb));
        COLS.forEach(function (c) {
          var v = r[c.k], td = h('td', {class: c.num ? 'num' : null});
          if (c.k === 'name') td.appendChild(h('a', {class: 'run-link', href: hashFor('run', r.id), text: v || shortId(r.id)}));
          else if (c.k === 'experiment' || c.k === 'workload') {
            if (v) td.appendChild(h('a', {class: 'drill', href: '#', onclick: function (ev) { ev.preventDefault(); set(c.k, v); }, text: v}));
            else td.textContent = '–';
          } else if (c.k === 'status') td.appendChild(h('span', {class: 'status ' + v, text: v}));
          else if (c.k === 'start_ns') td.textContent = date(v);
          else if (c.k === 'findings' && v) td.appendChild(h('span', {class: 'count', text: String(v)}));
          else td.textContent = c.f ? c.f(v) : (v === null ? '–' : String(v));
          tr.appendChild(td);
        });
        body.appendChild(tr);
      });
      var t = h('table', {id: 'runs', class: 'runs'}, h('thead', null, head), body);
      tableBox.appendChild(rows.length ? t : h('p', {class: 'empty', text: 'No run matches these filters.'}));
    }
    crumbs();
    drawFilters();
    api('/api/runs?limit=100000&sort=-start').then(function (d) {
      if (!alive(token)) return;
      var ex = {}, wl = {};
      d.runs.forEach(function (r) { if (r.experiment) ex[r.experiment] = 1; if (r.workload) wl[r.workload] = 1; });
      facets.experiments = Object.keys(ex).sort();
      facets.workloads = Object.keys(wl).sort();
      drawFilters();
    }).catch(function () { /* the filters stay free-form */ });
    load();
  }

  /* ====================================================================== */
  /* run view                                                                */
  /* ====================================================================== */
  function runView(token) {
    var id = route.arg, q = route.q;
    busy();
    var run = null, metrics = [], findings = [], zoom = null, end = 1, timer = null, syncing = false;
    var figures = null;  /* the run's row as /api/runs lists it */
    /* a run of several nodes (a job, an import of several): node= among the
     * series' labels. node is the one picked ('' for all), in the URL. */
    var node = q.get('node') || '', nodeNames = [];
    var nodeBox = h('div'), heatBox = h('div', {class: 'charts'}), nodePick = h('span');
    var ranges = function () { return findings; };
    var headBox = h('div'), metricBox = h('div', {class: 'charts'}), stepBox = h('div', {class: 'charts'});
    var phaseBar = h('div'), findBox = h('div'), logBox = h('div'), envBox = h('div');
    var picker = h('div', {class: 'picker'}), rangeText = h('span', {class: 'muted', id: 'range'});
    var z = (q.get('z') || '').split(',').map(Number);
    if (z.length === 2 && isFinite(z[0]) && isFinite(z[1]) && z[1] > z[0]) zoom = {a: z[0], b: z[1]};
    onCleanup(function () { clearTimeout(timer); });

    var ms = section('Metrics', 'Drag across any chart to zoom every chart; double-click or "Reset zoom" to see the whole run. ' +
      'Each chart is the lowest, mean and highest sample of each pixel-wide bucket, fetched again for the zoomed range.');
    add(ms, [h('div', {class: 'toolbar'}, nodePick, picker, h('button', {id: 'reset-zoom', onclick: function () { setZoom(null, true); }, text: 'Reset zoom'}), rangeText), metricBox]);
    var ss = section('Steps', 'Duration of each training step (min–max band when steps are grouped per pixel) and where the time went, phase by phase.');
    add(ss, [phaseBar, stepBox]);
    var fs = section('Findings', 'What the rules found, shaded on every chart\'s time axis; click a time range to zoom to it.');
    fs.appendChild(findBox);
    var ls = section('Logs'); ls.appendChild(logBox);
    var es = section('Environment'); es.appendChild(envBox);
    var ns = section('Nodes', 'Each node\'s CPU and GPU utilization over time (mean per bucket: pale blue 0 %, dark red 100 %), ' +
      'on the charts\' time axis. Click a node, in the table or a heatmap, to chart its metrics alone.');
    add(ns, [nodeBox, heatBox]);
    ns.hidden = true;
    /* Python hotspots: shown once the run has stack samples (--py-sample,
     * --py-profile), fetched again with the rest while the run records */
    var pys = section('Python hotspots', 'Python stacks sampled from outside the job\'s processes: each frame is as wide as ' +
      'the samples it was on the stack in. Pick a role or a phase, tick idle to see waiting threads too, click a frame to zoom.');
    pys.id = 'python';
    pys.hidden = true;
    var flame = null;
    add(app, [headBox, ns, ms, ss, pys, fs, ls, es]);

    /* The charts chosen are in the URL as one m= per series key (a key may
     * hold commas: gpu.mem_used_bytes{gpu=0,pid=42}, or an app metric's own
     * name); a lone m= with no value is "none". An m= that is no key of the
     * run is taken as the comma-joined list links of before were. */
    function multi() { return nodeNames.length > 1; }
    function nodeOf(x) { return F.labelValue(x.labels, 'node'); }
    /* the series of the node picked; every series when none is */
    function onNode(x) { return !node || nodeOf(x) === node; }
    function chosen() {
      var ms = q.getAll('m'), have = metrics.map(seriesKey);
      var mine = metrics.filter(onNode).map(seriesKey);
      if (ms.length) {
        return [].concat.apply([], ms.map(function (k) {
          return have.indexOf(k) >= 0 ? [k] : k.split(',');
        })).filter(function (k) { return k && (!node || mine.indexOf(k) >= 0); });
      }
      /* by default each of the nodes shown: the picked one, or every one of
       * a few (past 4 nodes, the heatmaps stand for them all) */
      if (multi() && !node && nodeNames.length > 4) return [];
      var own = function (x) { return onNode(x) && !F.labelsLess(x.labels, 'node'); };
      var out = [];
      DEFAULT_METRICS.forEach(function (name) {
        var l = metrics.filter(function (x) { return x.name === name && own(x); });
        if (!l.length && name === M.GPU_UTIL.name)
          l = metrics.filter(function (x) { return x.name === name && onNode(x) && F.labelsLess(x.labels, 'node'); });
        l.forEach(function (x) { out.push(seriesKey(x)); });
      });
      return out;
    }
    function updateRangeText() {
      var r = zoom || {a: 0, b: end};
      rangeText.textContent = zoom ? 'showing ' + dur(r.a) + ' – ' + dur(r.b) + ' of ' + dur(end) : 'whole run, ' + dur(end);
    }
    function setZoom(r, redraw) {
      zoom = r;
      var n = new URLSearchParams(q);
      if (r) n.set('z', r.a.toFixed(4) + ',' + r.b.toFixed(4)); else n.delete('z');
      q = n; setState(n);
      updateRangeText();
      if (redraw) {
        syncing = true;
        charts.forEach(function (c) { c.u.setScale('x', {min: r ? r.a : 0, max: r ? r.b : end}); });
        syncing = false;
      }
      clearTimeout(refetchTimer);
      refetchTimer = setTimeout(refetchAll, 120);
    }
    var refetchTimer = null;
    onCleanup(function () { clearTimeout(refetchTimer); });
    function onScale(u, key) {
      if (key !== 'x' || syncing) return;
      var mn = u.scales.x.min, mx = u.scales.x.max;
      syncing = true;
      charts.forEach(function (c) { if (c.u !== u) c.u.setScale('x', {min: mn, max: mx}); });
      syncing = false;
      setZoom(mn <= 0.0005 && mx >= end - 0.0005 ? null : {a: Math.max(0, mn), b: mx}, false);
    }
    function baseOpts(title, unit, height) {
      return {
        title: title, width: chartWidth(metricBox), height: height || 190,
        cursor: {sync: {key: 'run-' + id, setSeries: false}, drag: {x: true, y: false},
          bind: {dblclick: function () { return function () { setZoom(null, true); return null; }; }}},
        scales: {x: {time: false, min: zoom ? zoom.a : 0, max: zoom ? zoom.b : end}},
        axes: [F.axis('s'), F.axis(unit, {size: axisSize(50)})],
        legend: {live: true},
        hooks: {setScale: [onScale], drawAxes: [shadeHook(ranges)]},
        series: [{label: 'time', value: function (u, v) { return v === null ? '–' : dur(v); }}]
      };
    }
    function range() { var r = zoom || {a: 0, b: end}; return r; }
    /* New data for the range shown: y scales fit it, the x range stays. */
    function applyData(u, d) {
      var r = range();
      syncing = true;
      try { u.setData(d, true); u.setScale('x', {min: r.a, max: r.b}); } finally { syncing = false; }
    }
    function seriesData(m, width) {
      var r = range();
      var a = {name: m.name, labels: m.labels || null, points: Math.max(16, Math.min(16384, Math.round(width)))};
      if (zoom) { a.from = r.a.toFixed(6); a.to = r.b.toFixed(6); }
      return api(runPath(id) + '/series' + qs(a)).then(function (d) { return [d.t, d.min, d.max, d.mean]; });
    }
    function metricChart(key, n) {
      /* name and labels as the run lists them: a name may hold '{' */
      var info = metrics.filter(function (x) { return seriesKey(x) === key; })[0];
      if (!info) return;
      var m = {name: info.name, labels: info.labels};
      var unit = info.unit, c = PAL[n % PAL.length];
      var fmt = function (u, v) { return byUnit(v, unit); };
      var o = baseOpts(key + (unit ? ' (' + unit + ')' : ''), unit);
      o.series.push({label: 'min', stroke: c + '66', width: 1, value: fmt, points: {show: false}});
      o.series.push({label: 'max', stroke: c + '66', width: 1, value: fmt, points: {show: false}});
      if (unit === 'pct' || unit === 'bytes') o.scales.y = {range: fromZero};
      o.series.push({label: 'mean', stroke: c, width: 1.5, value: fmt});
      o.bands = [{series: [2, 1], fill: c + '22'}];
      var box = h('div', {class: 'chart', title: F.metricHelp(info.name) || null, dataset: {metric: key}});
      metricBox.appendChild(box);
      var ch = newChart(o, [[], [], [], []], box, {kind: 'metric', metric: m});
      ch.fetch = function () {
        /* the answer for the range shown now only: one for a range zoomed
         * away from may come after it */
        var mine = ch.fetches = (ch.fetches || 0) + 1;
        return seriesData(m, ch.u.bbox.width / devicePixelRatio || ch.u.width).then(function (d) {
          if (alive(token) && mine === ch.fetches) { applyData(ch.u, d); box.dataset.points = d[0].length; }
        });
      };
      return ch;
    }
    function stepCharts() {
      clear(stepBox);
      var so = baseOpts('Step duration', 'ms');
      var fmt = function (u, v) { return v === null ? '–' : dur(v / 1e3); };
      so.series.push({label: 'min', stroke: '#2f6fdb66', width: 1, value: fmt, points: {show: false}});
      so.series.push({label: 'max', stroke: '#2f6fdb66', width: 1, value: fmt, points: {show: false}});
      so.scales.y = {range: fromZero};
      so.series.push({label: 'mean', stroke: '#2f6fdb', width: 1.5, value: fmt});
      so.bands = [{series: [2, 1], fill: '#2f6fdb22'}];
      var sbox = h('div', {class: 'chart', dataset: {metric: 'steps'}});
      stepBox.appendChild(sbox);
      var sc = newChart(so, [[], [], [], []], sbox, {kind: 'steps'});
      var po = baseOpts('Phases per step (stacked)', 'ms', 170);
      var raw = {};
      po.bands = [];
      po.scales.y = {range: fromZero};
      PHASES.forEach(function (p, i) {
        po.series.push({label: p, stroke: PHASE_COL[p], fill: PHASE_COL[p] + '55', width: 1, points: {show: false},
          value: function (u, v, si, idx) { return idx === null || !raw[p] ? '–' : dur(raw[p][idx] / 1e3); }});
        if (i) po.bands.push({series: [i + 1, i], fill: PHASE_COL[p] + '55'});
      });
      po.series[1].fill = PHASE_COL.data + '55';
      var pbox = h('div', {class: 'chart', dataset: {metric: 'phases'}});
      stepBox.appendChild(pbox);
      var pc = newChart(po, [[]].concat(PHASES.map(function () { return []; })), pbox, {kind: 'phases'});
      sc.fetch = function () {
        var r = range(), a = {points: Math.max(16, Math.round(sc.u.bbox.width / devicePixelRatio || 800))};
        if (zoom) { a.from = r.a.toFixed(6); a.to = r.b.toFixed(6); }
        var mine = sc.fetches = (sc.fetches || 0) + 1;
        return api(runPath(id) + '/steps' + qs(a)).then(function (d) {
          if (!alive(token) || mine !== sc.fetches) return;
          applyData(sc.u, [d.t, d.dur_min_ms, d.dur_max_ms, d.dur_mean_ms]);
          var acc = d.t.map(function () { return 0; }), cols = [d.t];
          PHASES.forEach(function (p) {
            raw[p] = d.phases_ms[p] || acc.map(function () { return 0; });
            acc = acc.map(function (x, i) { return x + (raw[p][i] || 0); });
            cols.push(acc.slice());
          });
          applyData(pc.u, cols);
          sbox.dataset.points = d.t.length;
        });
      };
    }
    function refetchAll() {
      var ps = charts.filter(function (c) { return c.fetch; }).map(function (c) { return c.fetch(); });
      return Promise.all(ps).catch(function (e) {
        if (alive(token)) console.warn('refetch failed: ' + e.message); // eslint-disable-line no-console
      });
    }
    function drawMetrics() {
      charts.filter(function (c) { return c.kind === 'metric'; }).forEach(function (c) {
        c.u.destroy(); charts.splice(charts.indexOf(c), 1);
      });
      clear(metricBox);
      var list = chosen();
      if (!list.length) {
        metricBox.appendChild(h('p', {class: 'empty', text: multi() && !node ? 'Pick a node to chart its metrics, or pick series with "Metrics": the heatmaps above show every node.' :
          'No metric chosen: pick some with "Metrics".'}));
      }
      list.forEach(function (k, i) {
        var c = metricChart(k, i);
        if (c) {
          c.fetch().catch(function (e) {
            if (alive(token)) console.warn('cannot load ' + k + ': ' + e.message); // eslint-disable-line no-console
          });
        }
      });
    }
    function drawPicker() {
      clear(picker);
      var panel = h('div', {class: 'panel', hidden: true});
      var filter = h('input', {type: 'search', placeholder: 'filter metrics', oninput: function () {
        var f = filter.value.toLowerCase();
        panel.querySelectorAll('label.m').forEach(function (l) { l.hidden = l.dataset.key.toLowerCase().indexOf(f) < 0; });
      }});
      panel.appendChild(filter);
      var cur = chosen(), list = h('div', {class: 'mlist'});
      metrics.filter(onNode).forEach(function (m) {
        var k = seriesKey(m);
        var cb = h('input', {type: 'checkbox', checked: cur.indexOf(k) >= 0, onchange: function () {
          var now = chosen().filter(function (x) { return x !== k; });
          if (cb.checked) now.push(k);
          var n = new URLSearchParams(q);
          n.delete('m');
          if (now.length) now.forEach(function (x) { n.append('m', x); }); else n.set('m', '');
          q = n; setState(n); drawMetrics(); btn.textContent = 'Metrics (' + now.length + ') ▾';
        }});
        list.appendChild(h('label', {class: 'm', title: F.metricHelp(m.name) || null, dataset: {key: k}}, cb, h('span', {text: k}),
          h('span', {class: 'muted', text: ' ' + (m.unit || '') + ' · ' + m.count})));
      });
      panel.appendChild(list);
      var btn = h('button', {id: 'metric-picker', onclick: function () { panel.hidden = !panel.hidden; if (!panel.hidden) filter.focus(); },
        text: 'Metrics (' + cur.length + ') ▾'});
      add(picker, [btn, panel]);
      /* drawn again when a running run gains series: one listener at a time */
      if (pickerOutside) document.removeEventListener('click', pickerOutside);
      pickerOutside = function (e) { if (!picker.contains(e.target)) panel.hidden = true; };
      document.addEventListener('click', pickerOutside);
    }
    var pickerOutside = null;
    onCleanup(function () { if (pickerOutside) document.removeEventListener('click', pickerOutside); });
    function drawHeader() {
      clear(headBox);
      var r = run;
      var crumbs = h('div', {class: 'crumbs'}, h('a', {href: '#/runs', text: 'All runs'}));
      if (r.experiment) add(crumbs, [h('span', {class: 'sep', text: '›'}), h('a', {href: hashFor('runs', '', new URLSearchParams({experiment: r.experiment})), text: r.experiment})]);
      var w = (r.tags && r.tags.workload) || (r.params && r.params.workload);
      if (w) add(crumbs, [h('span', {class: 'sep', text: '›'}), h('a', {href: hashFor('runs', '', new URLSearchParams({workload: w})), text: w})]);
      var kv = function (o) {
        var ks = Object.keys(o || {});
        return ks.length ? ks.map(function (k) { return h('span', {class: 'chip'}, h('b', {text: k}), '=' + o[k]); }) : h('span', {class: 'muted', text: 'none'});
      };
      var st = r.steps || {};
      var cards = h('div', {class: 'cards'});
      var card = function (k, v, n) { cards.appendChild(h('div', {class: 'card'}, h('div', {class: 'k', text: k}), h('div', {class: 'v', text: v}), n ? h('div', {class: 'n', text: n}) : null)); };
      var mean = function (name) { var s = (r.metrics || {})[name]; return s ? s.mean : null; };
      card('duration', dur(r.duration_s), r.status === 'running' ? 'still recording' : (r.signal ? 'signal ' + r.signal : r.exit_code != null ? 'exit ' + r.exit_code : 'no exit recorded'));
      card('steps', st.count ? String(st.count) : '–', st.count ? 'p50 ' + dur(st.p50_ns / 1e9) + ' · p95 ' + dur(st.p95_ns / 1e9) +
        (st.backward_passes && st.backward_per_step !== 1 ? ' · ' + (+st.backward_per_step.toPrecision(3)) + ' backward passes each' : '') : null);
      /* evaluation iterations (no_grad, eval()): counted apart from the training steps */
      var ev = r.eval_steps;
      if (ev && ev.count) card('eval steps', String(ev.count), 'p50 ' + dur(ev.p50_ns / 1e9) + ' · apart from training');
      /* samples/s and the means as the runs list has them (its row of this
       * run): gpu.util is per GPU (gpu.util{gpu=0}, no bare series), and
       * samples/s may come from the batch size over the mean step */
      var fig = figures || {};
      var logged = mean(M.APP_SAMPLES_PER_S.name);
      if (logged === null) logged = mean(M.APP_THROUGHPUT.name);
      var sps = fig.samples_per_s !== undefined ? fig.samples_per_s : logged;
      card('samples/s', num(sps), sps === null ? 'not logged by the script' :
        logged !== null ? 'mean of what the script logged' : 'batch size over the mean step');
      card('mean CPU', pct(fig.cpu_util_pct !== undefined ? fig.cpu_util_pct : mean(M.CPU_UTIL.name)), r.cpu_count + ' cores');
      card('mean GPU util', pct(fig.gpu_util_pct !== undefined ? fig.gpu_util_pct : mean(M.GPU_UTIL.name)), (r.gpus || []).length + ' GPUs');
      card('findings', String((r.findings || []).length), null);
      var title = h('h1', {id: 'run-name', text: r.name || shortId(r.id)});
      document.title = 'strobe · ' + (r.name || r.id);
      add(headBox, h('section', {class: 'head'}, crumbs,
        h('div', {class: 'titleline'}, title, h('span', {class: 'status ' + r.status, id: 'run-status', text: r.status}),
          h('a', {class: 'btn small', href: hashFor('compare', '', new URLSearchParams({runs: r.id})), text: 'Compare with…', onclick: function (e) {
            e.preventDefault(); if (selected.indexOf(r.id) < 0) selected.push(r.id); go('runs', '', new URLSearchParams(r.experiment ? {experiment: r.experiment} : {}));
          }})),
        h('dl', {class: 'kv'},
          h('dt', {text: 'id'}), h('dd', null, h('code', {text: r.id})),
          h('dt', {text: 'command'}), h('dd', null, h('code', {id: 'command', text: (r.command || []).join(' ')})),
          h('dt', {text: 'params'}), h('dd', {id: 'params'}, kv(r.params)),
          h('dt', {text: 'tags'}), h('dd', null, kv(r.tags)),
          h('dt', {text: 'started'}), h('dd', {text: date(r.start_ns) + ' on ' + (multi() ? nodeNames.length + ' nodes' : r.host || '?') + ' (' + (r.user || '?') + ')'})),
        cards));
    }
    function drawPhases() {
      clear(phaseBar);
      var ph = run.phases;
      if (!ph || !run.steps || !run.steps.count) { phaseBar.appendChild(h('p', {class: 'empty', text: 'No steps recorded in this run.'})); return; }
      var bar = h('div', {class: 'bar'}), leg = h('div', {class: 'legend'});
      PHASES.forEach(function (p) {
        var s = (ph[p] && ph[p].share) || 0;
        if (s > 0) { var d = h('div', {title: p + ' ' + (s * 100).toFixed(1) + ' %'}); d.style.width = (s * 100) + '%'; d.style.background = PHASE_COL[p]; bar.appendChild(d); }
        var i = h('i'); i.style.background = PHASE_COL[p];
        leg.appendChild(h('span', null, i, p + ' ' + (s * 100).toFixed(1) + ' %'));
      });
      add(phaseBar, [bar, leg]);
    }
    function drawFindings() {
      clear(findBox);
      /* a node's own findings, and the run's (judged across nodes) */
      var shown = findings.filter(function (f) { var n = F.labelValue(f.scope, 'node'); return !node || n === null || n === node; });
      if (!shown.length) { findBox.appendChild(h('p', {class: 'empty', text: 'No findings.'})); return; }
      var body = h('tbody');
      shown.forEach(function (f) {
        var sev = h('span', {class: 'sev', text: f.severity}); sev.style.background = SEV[f.severity] || SEV.info;
        var n = F.labelValue(f.scope, 'node');
        body.appendChild(h('tr', {dataset: {node: n || ''}}, h('td', null, sev), h('td', {text: f.rule}),
          multi() ? h('td', {text: n === null ? 'all' : n}) : null,
          h('td', {text: (multi() ? F.labelsLess(f.scope, 'node') : f.scope) || ''}),
          h('td', null, h('a', {class: 'range', href: '#', onclick: function (e) {
            e.preventDefault();
            var pad = Math.max((f.b - f.a) * 0.05, 0.05);
            setZoom({a: Math.max(0, f.a - pad), b: Math.min(end, f.b + pad)}, true);
            ms.scrollIntoView({behavior: 'smooth'});
          }, text: F.offsetRange(f.a, f.b)})),
          h('td', null, h('div', {text: f.evidence || ''}), f.events ? h('div', {class: 'muted', text: f.events}) : null),
          h('td', {text: f.recommendation || ''})));
      });
      var head = ['severity', 'rule'].concat(multi() ? ['node'] : [], ['scope', 'time', 'evidence', 'recommendation']);
      findBox.appendChild(h('table', {id: 'findings'}, h('thead', null, h('tr', null, head.map(function (x) { return h('th', {text: x}); }))), body));
    }
    /* ---- nodes: the picker, the table, the heatmaps -------------------- */
    function findNodes() {
      var seen = {};
      if (run.nodes) run.nodes.forEach(function (n) { seen[n.node] = 1; });
      metrics.forEach(function (x) { var n = nodeOf(x); if (n !== null) seen[n] = 1; });
      nodeNames = Object.keys(seen).sort(function (a, b) { return a.localeCompare(b, undefined, {numeric: true}); });
      if (node && nodeNames.indexOf(node) < 0) node = '';
    }
    function pickNode(n) {
      if (n === node) return;
      node = n;
      var nq = new URLSearchParams(q);
      if (n) nq.set('node', n); else nq.delete('node');
      nq.delete('m'); /* the charts of that node: its defaults */
      q = nq; setState(nq);
      drawNodePick(); drawNodeTable(); drawPicker(); drawMetrics(); drawFindings(); drawTexts();
    }
    function drawNodePick() {
      clear(nodePick);
      if (!multi()) return;
      var sel = h('select', {id: 'node-pick', onchange: function () { pickNode(sel.value); }},
        option('', 'all ' + nodeNames.length + ' nodes', !node));
      nodeNames.forEach(function (n) { sel.appendChild(option(n, 'node ' + n, n === node)); });
      add(nodePick, h('label', null, h('span', {text: 'node'}), sel));
    }
    function drawNodeTable() {
      clear(nodeBox);
      ns.hidden = !multi();
      if (!multi()) return;
      var info = {};
      (run.nodes || []).forEach(function (n) { info[n.node] = n; });
      var mean = function (name, n) {
        var k = seriesKey({name: name, labels: 'node=' + n}), m = (run.metrics || {})[k];
        return m ? m.mean : null;
      };
      var body = h('tbody');
      nodeNames.forEach(function (n) {
        var x = info[n] || {};
        var cpu = x.cpu_util_pct !== undefined ? x.cpu_util_pct : mean(M.CPU_UTIL.name, n);
        body.appendChild(h('tr', {class: n === node ? 'picked' : null, dataset: {node: n}},
          h('td', null, h('a', {href: '#', class: 'node-link', onclick: function (e) { e.preventDefault(); pickNode(n === node ? '' : n); }, text: n})),
          h('td', {text: x.host || '–'}), h('td', null, x.status ? h('span', {class: 'status ' + x.status, text: x.status}) : '–'),
          h('td', {class: 'num', text: x.start_ns ? '+' + dur((x.start_ns - run.start_ns) / 1e9) : '–'}),
          h('td', {class: 'num', text: dur(x.duration_s)}),
          h('td', {class: 'num', dataset: {key: 'cpu'}, text: pct(cpu)}),
          h('td', {class: 'num', dataset: {key: 'gpu'}, text: pct(x.gpu_util_pct)}),
          h('td', {class: 'num', text: x.samples !== undefined ? String(x.samples) : '–'}),
          h('td', {class: 'num', text: x.clock_rtt_ns ? (x.clock_offset_ns / 1e6).toFixed(3) + ' ms (± ' + (x.clock_rtt_ns / 2e6).toFixed(3) + ')' : '–'})));
      });
      var t = h('table', {id: 'nodes'}, h('thead', null, h('tr', null, ['node', 'host', 'status', 'start', 'duration', 'mean CPU', 'mean GPU util', 'samples', 'clock (store − node)']
        .map(function (x, i) { return h('th', {class: i >= 3 ? 'num' : null, text: x}); }))), body);
      /* many nodes: the table scrolls, the heatmaps stay in view */
      nodeBox.appendChild(h('div', {class: nodeNames.length > 12 ? 'scroll' : null}, t));
    }
    /* A metric per node over time: one request for every node, at about a
     * bucket per two pixels, again for a zoomed range (api.md: heatmap). */
    function heatChart(metric) {
      var src = {names: [], rows: [], start: 0, width: 1};
      var o = baseOpts(metric.name + ' per node (%)', '', Math.min(580, F.heatHeight(nodeNames.length)));
      var data = F.heatmap(o, src);
      var at = h('div', {class: 'muted heat-at', text: ' '});
      o.hooks.setCursor = [function (u) {
        var c = F.heatAt(u, src);
        at.textContent = c ? 'node ' + c.name + ' at ' + dur(c.t) + ': ' + (c.value === null ? 'no sample' : pct(c.value)) : ' ';
      }];
      var box = h('div', {class: 'chart', title: F.metricHelp(metric.name) || null, dataset: {heatmap: metric.name}});
      heatBox.appendChild(box);
      heatBox.appendChild(at);
      var ch = newChart(o, data, box, {kind: 'heat'});
      var down = null;
      box.addEventListener('mousedown', function (e) { down = [e.clientX, e.clientY]; });
      box.addEventListener('click', function (e) {
        /* a click, not the end of a drag that zooms: pick that node */
        if (!down || Math.abs(e.clientX - down[0]) + Math.abs(e.clientY - down[1]) > 3) return;
        var c = F.heatAt(ch.u, src);
        if (c) pickNode(c.name);
      });
      ch.fetch = function () {
        var r = range(), a = {name: metric.name, points: Math.max(16, Math.min(2000, Math.round((ch.u.bbox.width / devicePixelRatio || 800) / 2)))};
        if (zoom) { a.from = r.a.toFixed(6); a.to = r.b.toFixed(6); }
        var mine = ch.fetches = (ch.fetches || 0) + 1;
        return api(runPath(id) + '/heatmap' + qs(a)).then(function (d) {
          if (!alive(token) || mine !== ch.fetches) return;
          src.names = d.nodes; src.rows = d.mean;
          src.start = (d.from_ns - run.start_ns) / 1e9; src.width = d.bucket_ns / 1e9;
          box.heat = d; /* for the tests: what is drawn */
          box.dataset.rows = String(d.nodes.length);
          applyData(ch.u, F.heatData(src));
          box.hidden = !d.nodes.length;
          at.hidden = !d.nodes.length;
        });
      };
      return ch;
    }
    function drawHeat() {
      charts.filter(function (c) { return c.kind === 'heat'; }).forEach(function (c) {
        c.u.destroy(); charts.splice(charts.indexOf(c), 1);
      });
      clear(heatBox);
      if (!multi()) return Promise.resolve();
      var hs = [M.CPU_UTIL, M.GPU_UTIL].filter(function (m) {
        return metrics.some(function (x) { return x.name === m.name; });
      }).map(heatChart);
      return Promise.all(hs.map(function (c) { return c.fetch(); }));
    }
    function drawTexts() {
      clear(logBox);
      clear(envBox);
      var env = run.env || {}, keys = Object.keys(env).sort();
      var host = [['host', run.host], ['kernel', run.kernel], ['CPU', (run.cpu_model || '?') + ' × ' + run.cpu_count],
        ['memory', bytes(run.mem_total_bytes)], ['python', run.python_version], ['torch', run.torch_version],
        ['git', run.git_commit ? run.git_commit + (run.git_dirty ? ' (dirty)' : '') : null], ['cwd', run.cwd], ['strobe', run.strobe_version]];
      (run.gpus || []).forEach(function (g, i) { host.push(['GPU ' + i, [g.name, g.uuid, g.memory_total_bytes ? bytes(g.memory_total_bytes) : null].filter(Boolean).join(' · ')]); });
      keys.forEach(function (k) { host.push([k, env[k]]); });
      var dl = h('dl', {class: 'kv', id: 'env'});
      host.forEach(function (p) { if (p[1] !== null && p[1] !== undefined) add(dl, [h('dt', {text: p[0]}), h('dd', {text: String(p[1])})]); });
      envBox.appendChild(dl);
      var envTexts = h('div');
      envBox.appendChild(envTexts);
      api(runPath(textsRun()) + '/texts').then(function (d) {
        if (!alive(token)) return;
        var list = Array.isArray(d) ? d : (d.texts || []);
        drawLogs(list.filter(isLog));
        list.filter(function (t) { return !isLog(t); }).forEach(function (t) {
          var pre = h('pre', {class: 'text', dataset: {kind: t.kind}, text: 'loading…'});
          envTexts.appendChild(h('details', null, h('summary', null, textTitle(t)), pre));
          loadText(t, pre);
        });
      }, function () { if (alive(token)) drawLogs([]); });
    }
    function isLog(t) { return /out|err|log/i.test(t.kind); }
    /* A job keeps its output in each node's run: the picked node's. */
    function textsRun() {
      var n = node && (run.nodes || []).filter(function (x) { return x.node === node; })[0];
      return n ? n.run : id;
    }
    function textTitle(t) { return t.kind + ' · ' + bytes(t.bytes) + (t.kept !== undefined && t.kept < t.bytes ? ' (cut: the start and the end kept)' : ''); }
    /* A text into its pre; one scrolled to its end stays at the end as the
     * text grows (a running job's output, refreshed like tail -f). */
    function loadText(t, pre) {
      return api(runPath(textsRun()) + '/texts/' + encodeURIComponent(t.kind)).then(function (d) {
        var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.textContent = (d && d.text) || '(empty)';
        pre.dataset.bytes = String(t.bytes);
        if (atEnd && pre.dataset.loaded) pre.scrollTop = pre.scrollHeight;
        pre.dataset.loaded = '1';
      }, function (e) { pre.textContent = 'cannot load: ' + e.message; });
    }
    function drawLogs(logs) {
      clear(logBox);
      if (!logs.length) {
        logBox.appendChild(h('p', {class: 'empty', id: 'no-logs', text: run.nodes && !node ? 'each node keeps its own output: pick a node' :
          run.status === 'running' ? 'no output yet' : 'no logs recorded'}));
        return;
      }
      logs.forEach(function (t) {
        var pre = h('pre', {class: 'text', dataset: {kind: t.kind}, text: 'loading…'});
        logBox.appendChild(h('details', {open: true}, h('summary', null, textTitle(t)), pre));
        loadText(t, pre);
      });
    }
    /* While the run records, the recorder stores the job's output every few
     * seconds: fetch what grew. */
    function refreshLogs() {
      return api(runPath(textsRun()) + '/texts').then(function (d) {
        if (!alive(token)) return;
        var logs = (Array.isArray(d) ? d : (d.texts || [])).filter(isLog);
        var pres = logs.map(function (t) { return logBox.querySelector('pre[data-kind="' + CSS.escape(t.kind) + '"]'); });
        if (pres.some(function (p) { return !p; })) return drawLogs(logs);
        return Promise.all(logs.map(function (t, i) {
          if (pres[i].dataset.bytes === String(t.bytes)) return null;
          pres[i].parentNode.querySelector('summary').textContent = textTitle(t);
          return loadText(t, pres[i]);
        }));
      });
    }
    /* The flame data of every role, phase and state: the graph filters it
     * in the page, and setData keeps the user's choice and zoom. */
    function loadFlame() {
      return api(runPath(id) + '/flame').then(function (d) {
        if (!alive(token)) return;
        var has = Array.isArray(d.counts) && d.counts.length > 0;
        pys.hidden = !has;
        if (!has) return;
        if (!flame) { flame = strobeFlame.create(pys); onCleanup(flame.destroy); }
        flame.setData(d);
        pys.dataset.samples = String(d.samples);
      }, function () { /* a store from before the samples: no section */ });
    }
    function loadFindings() {
      return api(runPath(id) + '/findings').then(function (d) {
        var t0 = d.t0_ns || run.start_ns;
        findings = d.findings.map(function (f) {
          var a = Math.max(0, (f.start_ns - t0) / 1e9), b = Math.max(a, (f.end_ns - t0) / 1e9);
          return Object.assign({}, f, {a: a, b: b, whole: a <= 0.01 * end && b >= 0.99 * end});
        });
      });
    }
    /* The run's length as the store has it: up to its end, else (running,
     * or lost: a recorder that died leaves no end) up to its last committed
     * sample, which is what duration_s says. Not the browser's clock, which
     * keeps going after a lost run and may be off from the recorder's. */
    function runEnd(r) {
      if (r.end_ns) return (r.end_ns - r.start_ns) / 1e9;
      if (r.duration_s !== null && r.duration_s !== undefined) return r.duration_s;
      return Math.max(0.001, (Date.now() * 1e6 - r.start_ns) / 1e9);
    }
    /* The run's row of the runs list (by its id: a name may hold a comma) */
    function loadFigures() {
      return api('/api/compare' + qs({runs: run.id, analysis: '0'})).then(function (d) {
        if (!alive(token)) return;
        figures = d.runs[0] || null;
        drawHeader();
      }, function () { /* the cards keep show's figures */ });
    }
    /* A running run gains series as it goes (an app.* metric logged from
     * some step on, a process started later): the picker lists them, and
     * the default charts include them, without a reload. */
    function refreshMetrics() {
      return api(runPath(id) + '/metrics').then(function (d) {
        if (!alive(token)) return;
        var next = d.metrics || [], before = chosen().join('\n');
        var changed = next.map(seriesKey).join('\n') !== metrics.map(seriesKey).join('\n');
        metrics = next;
        if (!changed) return;
        var before_n = nodeNames.join('\n');
        findNodes();
        if (nodeNames.join('\n') !== before_n) { drawNodePick(); drawNodeTable(); drawHeat(); }
        drawPicker();
        if (chosen().join('\n') !== before) drawMetrics();
      });
    }
    function live() {
      timer = setTimeout(function () {
        api(runPath(id)).then(function (r) {
          if (!alive(token)) return;
          run = r; end = Math.max(runEnd(r), 0.001);
          drawHeader();
          drawNodeTable();
          updateRangeText();
          return Promise.all([loadFindings(), refreshMetrics(), loadFigures()]).then(function () {
            drawFindings();
            if (!zoom) {
              /* syncing: not a zoom by the user, which would fetch it all again */
              syncing = true;
              try { charts.forEach(function (c) { c.u.setScale('x', {min: 0, max: end}); }); } finally { syncing = false; }
            }
            return Promise.all([refetchAll(), refreshLogs(), loadFlame()]);
          });
        }).catch(function () { /* next time */ }).then(function () {
          if (!alive(token)) return;
          if (run.status === 'running') live();
          else timer = setTimeout(refreshLogs, 3000); /* the whole output is stored just after the end */
        });
      }, 3000);
    }
    Promise.all([api(runPath(id)), api(runPath(id) + '/metrics')]).then(function (res) {
      /* The page asks by the run's id from now on: a name, a prefix or
       * "last" may name a newer run by the next refresh (the same name
       * started again), and the page would switch runs under its header. */
      if (!alive(token) || res[1].run === res[0].id) return res;
      return api(runPath(res[0].id) + '/metrics').then(function (m) { return [res[0], m]; });
    }).then(function (res) {
      if (!alive(token)) return;
      run = res[0]; metrics = res[1].metrics || [];
      id = run.id;
      end = Math.max(runEnd(run), 0.001);
      findNodes();
      drawHeader();
      drawNodePick();
      drawNodeTable();
      drawPicker();
      updateRangeText();
      drawPhases();
      drawTexts();
      return Promise.all([loadFindings(), loadFigures()]).then(function () {
        drawFindings();
        stepCharts();
        drawMetrics();
        /* the heatmaps fetch once they are drawn, after the others' fetch */
        return Promise.all([refetchAll(), drawHeat(), loadFlame()]);
      });
    }).then(function () {
      if (!alive(token)) return;
      ready();
      if (run && run.status === 'running') live();
    }).catch(function (e) {
      if (!alive(token)) return;
      clear(app);
      failBox(app, 'run ' + id, e);
      ready();
    });
  }

  /* ====================================================================== */
  /* compare view                                                            */
  /* ====================================================================== */
  function ema(ys, a) {
    if (!a) return ys;
    var s = 0, n = 0, out = new Array(ys.length);
    for (var i = 0; i < ys.length; i++) {
      var y = ys[i];
      if (y === null || y === undefined || !isFinite(y)) { out[i] = null; continue; }
      s = a * s + (1 - a) * y; n++;
      out[i] = s / (1 - Math.pow(a, n));
    }
    return out;
  }
  /* Steps of a run as [time, step number] pairs, to put a metric on steps. */
  function stepMap(st) {
    var ts = [], ns = [], c = 0;
    for (var i = 0; i < st.t.length; i++) { ts.push(st.t[i]); ns.push(c + 1); c += st.count[i]; }
    return {t: ts, n: ns, total: c};
  }
  function interp(m, t) {
    var a = m.t, lo = 0, hi = a.length - 1;
    if (!a.length) return null;
    if (t <= a[0]) return m.n[0] * Math.max(0, t / (a[0] || 1));
    if (t >= a[hi]) return m.n[hi];
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (a[mid] <= t) lo = mid; else hi = mid; }
    return m.n[lo] + (m.n[hi] - m.n[lo]) * (t - a[lo]) / (a[hi] - a[lo]);
  }

  function compareView(token) {
    var q = route.q;
    busy();
    var ids = (q.get('runs') || '').split(',').filter(Boolean);
    var head = section('Compare runs', 'Several runs on one chart, over elapsed time or over step number; untick a run to hide it. ' +
      'The smoothing is an exponential moving average of what each run recorded.');
    app.appendChild(head);
    if (!ids.length && !q.get('workload')) {
      head.appendChild(h('p', {class: 'empty', text: 'No runs chosen: tick two or more runs in the '}, h('a', {href: '#/runs', text: 'runs list'}), ' and press "Compare".'));
      ready();
      return;
    }
    var resolve = ids.length ? Promise.resolve(ids) : api('/api/runs' + qs({workload: q.get('workload'), sort: 'start'})).then(function (d) {
      return d.runs.map(function (r) { return r.id; }).slice(0, 16);
    });
    var state = {cmp: null, metrics: {}, steps: {}, series: {}, runs: []}, analysis = null;
    var controls = h('div', {class: 'toolbar wrap'}), toggles = h('div', {class: 'toggles', id: 'toggles'});
    var chartBox = h('div', {class: 'chart', id: 'compare-chart'}), diffBox = h('div', {id: 'diff-box'});
    add(head, [controls, toggles, chartBox]);
    var ds = section('Differences', 'Parameters, tags and summary figures side by side; the first run is the baseline, changes are against it.');
    ds.appendChild(diffBox);
    app.appendChild(ds);
    var chart = null, shown = null;

    function param(k, d) { return q.get(k) !== null ? q.get(k) : d; }
    function hidden() { return (q.get('hide') || '').split(',').filter(Boolean); }
    function update(k, v) {
      var n = new URLSearchParams(q);
      if (v === null || v === '') n.delete(k); else n.set(k, v);
      q = n; setState(n);
    }
    function metricKey() {
      var k = q.get('metric');
      if (k) return k;
      return state.runs.some(function (r) { return r.steps; }) ? 'step' : M.CPU_UTIL.name;
    }
    function drawControls() {
      clear(controls);
      var all = {};
      state.runs.forEach(function (r) { (state.metrics[r.id] || []).forEach(function (m) { all[seriesKey(m)] = m.unit; }); });
      var sel = h('select', {id: 'cmp-metric', onchange: function () { update('metric', sel.value); redraw(); }},
        option('step', 'step time', metricKey() === 'step'));
      Object.keys(all).sort().forEach(function (k) { sel.appendChild(option(k, k, metricKey() === k)); });
      var mode = param('x', 'time');
      var seg = h('div', {class: 'seg', id: 'cmp-x'}, [['time', 'elapsed time'], ['step', 'step number']].map(function (p) {
        return h('button', {class: mode === p[0] ? 'on' : null, dataset: {x: p[0]}, onclick: function () { update('x', p[0] === 'time' ? null : p[0]); drawControls(); redraw(); }, text: p[1]});
      }));
      var sm = parseFloat(param('smooth', '0')) || 0;
      var val = h('span', {class: 'num', id: 'smooth-value', text: sm.toFixed(2)});
      var slider = h('input', {type: 'range', id: 'smooth', min: '0', max: '0.99', step: '0.01', value: String(sm),
        oninput: function () { val.textContent = Number(slider.value).toFixed(2); update('smooth', Number(slider.value) ? slider.value : null); redrawSoon(); }});
      add(controls, [h('label', null, h('span', {text: 'metric'}), sel), seg,
        h('label', null, h('span', {text: 'smoothing'}), slider, val),
        h('button', {id: 'export-png', onclick: exportPng, text: 'Export PNG'}),
        h('button', {id: 'export-csv', onclick: exportCsv, text: 'Export CSV'})]);
    }
    function drawToggles() {
      clear(toggles);
      var hid = hidden();
      state.runs.forEach(function (r, i) {
        var sw = h('i'); sw.style.background = PAL[i % PAL.length];
        var cb = h('input', {type: 'checkbox', checked: hid.indexOf(r.id) < 0, dataset: {id: r.id}, onchange: function () {
          var now = hidden().filter(function (x) { return x !== r.id; });
          if (!cb.checked) now.push(r.id);
          update('hide', now.join(','));
          if (chart) chart.setSeries(i + 1, {show: cb.checked});
        }});
        toggles.appendChild(h('label', {class: 'toggle'}, cb, sw, h('a', {href: hashFor('run', r.id), text: r.name || shortId(r.id)}),
          h('span', {class: 'muted', text: ' ' + Object.keys(r.params || {}).map(function (k) { return k + '=' + r.params[k]; }).join(' ')})));
      });
    }
    var redrawTimer = null;
    function redrawSoon() { clearTimeout(redrawTimer); redrawTimer = setTimeout(redraw, 60); }
    onCleanup(function () { clearTimeout(redrawTimer); });
    function need() {
      var k = metricKey(), mode = param('x', 'time'), w = chartWidth(chartBox), ps = [];
      state.runs.forEach(function (r) {
        if ((k === 'step' || mode === 'step') && !state.steps[r.id]) {
          ps.push(api(runPath(r.id) + '/steps' + qs({points: 2000})).then(function (d) { state.steps[r.id] = d; }, function () { state.steps[r.id] = {t: [], count: [], dur_mean_ms: []}; }));
        }
        var sk = r.id + '|' + k;
        if (k !== 'step' && !state.series[sk]) {
          /* name and labels as the run lists them: a name may hold '{' */
          var m = (state.metrics[r.id] || []).filter(function (x) { return seriesKey(x) === k; })[0];
          state.series[sk] = m ? null : {t: [], mean: []};
          if (m) {
            ps.push(api(runPath(r.id) + '/series' + qs({name: m.name, labels: m.labels || null, points: Math.min(16384, w)})).then(function (d) { state.series[sk] = d; }));
          }
        }
      });
      return Promise.all(ps);
    }
    function unitOf(k) {
      if (k === 'step') return 'ms';
      for (var i = 0; i < state.runs.length; i++) {
        var m = (state.metrics[state.runs[i].id] || []).filter(function (x) { return seriesKey(x) === k; })[0];
        if (m) return m.unit;
      }
      return '';
    }
    function tables() {
      var k = metricKey(), mode = param('x', 'time'), a = Math.min(0.99, Math.max(0, parseFloat(param('smooth', '0')) || 0));
      return state.runs.map(function (r) {
        var xs, ys;
        if (k === 'step') {
          var st = state.steps[r.id], m = stepMap(st);
          ys = st.dur_mean_ms.slice();
          xs = mode === 'step' ? m.n.map(function (n, i) { return n + (st.count[i] - 1) / 2; }) : st.t.slice();
        } else {
          var s = state.series[r.id + '|' + k];
          ys = s.mean.slice();
          if (mode === 'step') {
            var mp = stepMap(state.steps[r.id]);
            xs = s.t.map(function (t) { return interp(mp, t); });
          } else xs = s.t.slice();
        }
        var keep = [], ky = [];
        xs.forEach(function (x, i) { if (x !== null && isFinite(x) && (!keep.length || x > keep[keep.length - 1])) { keep.push(x); ky.push(ys[i]); } });
        return [keep, ema(ky, a)];
      });
    }
    var redraws = 0;  /* the latest redraw draws: an earlier one's series may land while a later one's are on the way */
    function redraw() {
      if (!alive(token)) return Promise.resolve();
      var mine = ++redraws;
      busy();
      return need().then(function () {
        if (!alive(token) || mine !== redraws) return;
        var k = metricKey(), unit = unitOf(k), mode = param('x', 'time');
        var tbls = tables();
        var nonEmpty = tbls.filter(function (t) { return t[0].length; });
        var data = nonEmpty.length ? uPlot.join(tbls.map(function (t) { return t[0].length ? t : [[0], [null]]; })) : [[]].concat(tbls.map(function () { return []; }));
        shown = {data: data, k: k, unit: unit, mode: mode};
        var hid = hidden();
        var fmt = function (u, v) { return byUnit(v, unit); };
        var o = {
          title: (k === 'step' ? 'step time' : k) + ' over ' + (mode === 'step' ? 'step number' : 'elapsed time'),
          width: chartWidth(chartBox), height: 380,
          cursor: {drag: {x: true, y: false}},
          scales: {x: {time: false}},
          axes: [F.axis(mode === 'step' ? 'int' : 's', {label: mode === 'step' ? 'step' : 'time since start'}),
            F.axis(unit, {size: axisSize(50)})],
          series: [{label: mode === 'step' ? 'step' : 'time', value: function (u, v) { return v === null ? '–' : mode === 'step' ? num(v) : dur(v); }}].concat(state.runs.map(function (r, i) {
            return {label: r.name || shortId(r.id), stroke: PAL[i % PAL.length], width: 1.6, spanGaps: true, show: hid.indexOf(r.id) < 0, value: fmt};
          })),
          hooks: {setSeries: [function (u, i, o2) {
            if (i === null || o2.show === undefined) return;
            var r = state.runs[i - 1], now = hidden().filter(function (x) { return x !== r.id; });
            if (!o2.show) now.push(r.id);
            update('hide', now.join(','));
            var cb = toggles.querySelector('input[data-id="' + r.id + '"]');
            if (cb) cb.checked = o2.show;
          }]}
        };
        if (chart) chart.destroy();
        clear(chartBox);
        chart = new uPlot(o, data, chartBox);
        chartBox.dataset.mode = mode;
        chartBox.dataset.smooth = param('smooth', '0');
        chartBox.dataset.metric = k;
        chartBox.dataset.runs = state.runs.map(function (r) { return r.id; }).join(',');
        ready();
      }).catch(function (e) { if (alive(token) && mine === redraws) { failBox(chartBox, 'the series', e); ready(); } });
    }
    onCleanup(function () { if (chart) chart.destroy(); });
    function visibleRuns() { var hid = hidden(); return state.runs.map(function (r, i) { return {r: r, i: i}; }).filter(function (x) { return hid.indexOf(x.r.id) < 0; }); }
    function download(blob, name) {
      var a = h('a', {href: URL.createObjectURL(blob), download: name, id: 'last-export'});
      document.body.appendChild(a);
      a.click();
      setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
    }
    function fileBase() { return 'strobe-compare-' + (shown.k === 'step' ? 'step-time' : shown.k.replace(/[^A-Za-z0-9._-]+/g, '_')) + '-' + shown.mode; }
    function exportPng() {
      if (!chart) return;
      var src = chart.ctx.canvas, pad = 16 * devicePixelRatio, lh = 18 * devicePixelRatio;
      var vis = visibleRuns(), c = document.createElement('canvas');
      c.width = src.width + 2 * pad; c.height = src.height + 2 * pad + lh * (vis.length + 1);
      var x = c.getContext('2d');
      x.fillStyle = '#fff'; x.fillRect(0, 0, c.width, c.height);
      x.fillStyle = '#1d2330'; x.font = (13 * devicePixelRatio) + 'px system-ui, sans-serif';
      x.fillText(chart.root.querySelector('.u-title').textContent + (shown.unit ? ' (' + shown.unit + ')' : ''), pad, pad + lh * 0.7);
      x.drawImage(src, pad, pad + lh);
      vis.forEach(function (v, j) {
        var y = pad + lh + src.height + lh * (j + 0.8);
        x.fillStyle = PAL[v.i % PAL.length]; x.fillRect(pad, y - lh * 0.5, lh * 0.6, lh * 0.5);
        x.fillStyle = '#1d2330'; x.fillText(v.r.name || v.r.id, pad + lh, y);
      });
      c.toBlob(function (b) { download(b, fileBase() + '.png'); }, 'image/png');
    }
    function csvCell(s) { s = String(s); return /[",\n\r]/.test(s) || /^[=+\-@]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s; }
    function exportCsv() {
      if (!shown) return;
      var vis = visibleRuns(), d = shown.data;
      var lines = [[shown.mode === 'step' ? 'step' : 'seconds'].concat(vis.map(function (v) { return (v.r.name || v.r.id) + ' (' + v.r.id + ')'; })).map(csvCell).join(',')];
      for (var i = 0; i < d[0].length; i++) {
        lines.push([d[0][i]].concat(vis.map(function (v) { var y = d[v.i + 1][i]; return y === null || y === undefined ? '' : y; })).join(','));
      }
      download(new Blob([lines.join('\n') + '\n'], {type: 'text/csv'}), fileBase() + '.csv');
    }
    function drawDiff() {
      clear(diffBox);
      var c = state.cmp, runs = c.runs;
      var head = h('tr', null, h('th', {text: ''}), runs.map(function (r, i) {
        var sw = h('i', {class: 'sw'}); sw.style.background = PAL[i % PAL.length];
        return h('th', null, sw, r.name || shortId(r.id), i === 0 ? h('span', {class: 'muted', text: ' (baseline)'}) : null);
      }));
      var body = h('tbody');
      var group = function (t) { body.appendChild(h('tr', {class: 'group'}, h('td', {colspan: runs.length + 1, text: t}))); };
      group('parameters');
      if (!c.params.length) body.appendChild(h('tr', null, h('td', {class: 'empty', colspan: runs.length + 1, text: 'no parameters'})));
      var kvRow = function (p) {
        body.appendChild(h('tr', {class: p.differs ? 'differs' : null}, h('td', {text: p.key}), p.values.map(function (v) { return h('td', {text: v === null ? '–' : v}); })));
      };
      c.params.forEach(kvRow);
      if (c.tags.length) {
        group('tags');
        c.tags.forEach(kvRow);
      }
      group('summary');
      var F = {duration_s: ['duration', dur, 0], steps: ['steps', num, 0], step_p50_s: ['step p50', dur, -1], samples_per_s: ['samples/s', num, 1],
        cpu_util_pct: ['mean CPU', pct, 0], gpu_util_pct: ['mean GPU util', pct, 1], findings: ['findings', num, -1]};
      c.summary.forEach(function (s) {
        var f = F[s.key] || [s.key, num, 0];
        body.appendChild(h('tr', null, h('td', {text: f[0]}), s.values.map(function (v, i) {
          var d = s.delta_pct && s.delta_pct[i], td = h('td', {class: 'num'}, f[1](v));
          if (i > 0 && d !== null && d !== undefined && Math.abs(d) >= 0.05) {
            var good = f[2] === 0 ? null : (d > 0) === (f[2] > 0);
            td.appendChild(h('span', {class: 'delta ' + (good === null ? '' : good ? 'good' : 'bad'), text: ' ' + (d > 0 ? '+' : '') + d.toFixed(1) + ' %'}));
          }
          return td;
        })));
      });
      drawAnalysis(c.analysis, runs, body, group);
      diffBox.appendChild(h('table', {id: 'diff', class: 'diff'}, h('thead', null, head), body));
      diffBox.appendChild(explanations(c.analysis, runs));
    }
    /* A run's cell of the analysis: value, change from the baseline, and a
     * triangle when strobe compare judges the change beyond the runs' noise
     * (the same judgement as the command line's). */
    function judged(text, delta, unit, sig) {
      var td = h('td', {class: 'num' + (sig ? ' sig' : '')}, text);
      if (delta !== null && delta !== undefined && isFinite(delta)) {
        var s = delta.toFixed(1);
        td.appendChild(h('span', {class: 'delta', text: ' ' + (s === '-0.0' ? '0.0' : (delta > 0 ? '+' : '') + s) + unit}));
      }
      if (sig && delta) td.appendChild(h('span', {class: 'mark ' + (delta > 0 ? 'up' : 'down'), text: delta > 0 ? ' ▲' : ' ▼'}));
      return td;
    }
    function drawAnalysis(a, runs, body, group) {
      if (!a) return;
      var diff = a.diff || {}, ar = a.runs;
      var row = function (label, cells) { body.appendChild(h('tr', {dataset: {row: label}}, h('td', {text: label}), cells)); };
      if (ar.some(function (r) { return r.steps; })) {
        group('steps (▲▼: beyond the runs\' noise)');
        [['mean step', 'mean_ns'], ['p95 step', 'p95_ns']].forEach(function (s) {
          row(s[0], ar.map(function (r, i) {
            if (!r.steps) return h('td', {text: '–'});
            var d = i ? diff[r.id] : null, mean = s[1] === 'mean_ns';
            var base = ar[0].steps ? ar[0].steps[s[1]] : null;
            var ch = i && base ? 100 * (r.steps[s[1]] - base) / base : null;
            return judged(dur(r.steps[s[1]] / 1e9), ch, ' %', mean && d && d.step_significant);
          }));
        });
        group('phases (share of step)');
        /* phases no run spent time in are left out */
        Object.keys((ar.filter(function (r) { return r.phases; })[0] || {}).phases || {}).filter(function (p) {
          return ar.some(function (r) { return r.phases && r.phases[p] > 0; });
        }).forEach(function (p) {
          row(p, ar.map(function (r, i) {
            if (!r.phases) return h('td', {text: '–'});
            var d = i ? diff[r.id] : null, pts = d && d.phase_points ? d.phase_points[p] : null;
            return judged(num(100 * r.phases[p]) + ' %', pts, ' pt', d && d.phase_significant && d.phase_significant[p]);
          }));
        });
      }
      var keys = [];
      ar.forEach(function (r) { Object.keys(r.metrics || {}).forEach(function (k) { if (keys.indexOf(k) < 0) keys.push(k); }); });
      if (keys.length) group('utilization (mean)');
      keys.forEach(function (k) {
        row(k, ar.map(function (r, i) {
          var m = (r.metrics || {})[k];
          if (!m) return h('td', {text: '–'});
          var d = i && diff[r.id] ? (diff[r.id].metrics || {})[k] : null;
          return judged(byUnit(m.mean, m.unit), d ? d.mean_pct : null, ' %', d && d.significant);
        }));
      });
      var rules = [];
      ar.forEach(function (r) { (r.findings || []).forEach(function (f) { if (rules.indexOf(f) < 0) rules.push(f); }); });
      group('findings');
      if (!rules.length) body.appendChild(h('tr', null, h('td', {class: 'empty', colspan: runs.length + 1, text: 'none in any run'})));
      rules.forEach(function (f) {
        row(f, ar.map(function (r, i) {
          var d = i ? diff[r.id] : null, fired = (r.findings || []).indexOf(f) >= 0;
          var change = d && d.findings_new.indexOf(f) >= 0 ? 'new' : d && d.findings_gone.indexOf(f) >= 0 ? 'gone' : null;
          var td = h('td', {text: fired ? 'fired' : '–'});
          if (change) td.appendChild(h('span', {class: 'delta ' + (change === 'new' ? 'bad' : 'good'), text: ' ' + change}));
          return td;
        }));
      });
    }
    /* "B's steps are 23.0 % longer, 80 % of it in data (+4.1 ms per step)",
     * the line strobe compare prints, for each run against the baseline. */
    function explanations(a, runs) {
      var box = h('ul', {id: 'explain', class: 'explain'});
      if (!a) return box;
      a.runs.slice(1).forEach(function (r, j) {
        var d = a.diff[r.id], name = runs[j + 1].name || shortId(r.id);
        if (!d || d.step_mean_pct === null) return;
        var t;
        if (!d.step_significant) t = name + '\'s steps are within the noise of the baseline\'s (' + (d.step_mean_pct > 0 ? '+' : '') + d.step_mean_pct.toFixed(1) + ' %)';
        else {
          t = name + '\'s steps are ' + Math.abs(d.step_mean_pct).toFixed(1) + ' % ' + (d.step_mean_ns > 0 ? 'longer' : 'shorter');
          if (d.explained_by) t += ', ' + Math.round(100 * d.explained_share) + ' % of it in ' + d.explained_by + ' (' + (d.phase_ns[d.explained_by] > 0 ? '+' : '') + dur(d.phase_ns[d.explained_by] / 1e9) + ' per step)';
        }
        box.appendChild(h('li', {dataset: {run: r.id}, text: t}));
      });
      return box;
    }
    resolve.then(function (list) {
      ids = list;
      if (!q.get('runs')) update('runs', ids.join(','));
      /* the analysis reads every point of the runs' main series, which for
       * long runs takes a while: the chart and the table come first, the
       * analysis rows when they are ready */
      analysis = api('/api/compare' + qs({runs: ids.join(',')}));
      analysis.catch(function () { /* said where it is drawn */ });
      return Promise.all([api('/api/compare' + qs({runs: ids.join(','), analysis: '0'}))].concat(ids.map(function (i) {
        return api(runPath(i) + '/metrics').catch(function () { return {metrics: []}; });
      })));
    }).then(function (res) {
      if (!alive(token)) return;
      state.cmp = res[0];
      state.runs = res[0].runs;
      state.runs.forEach(function (r, i) { state.metrics[r.id] = res[i + 1].metrics || []; });
      head.querySelector('h2').textContent = 'Compare ' + state.runs.length + ' runs';
      drawControls();
      drawToggles();
      drawDiff();
      diffBox.dataset.analysis = 'pending';
      analysis.then(function (full) {
        if (!alive(token)) return;
        state.cmp = full;
        drawDiff();
        diffBox.dataset.analysis = 'ready';
      }, function (e) {
        if (!alive(token)) return;
        diffBox.appendChild(h('p', {class: 'empty', text: 'the analysis could not be loaded: ' + e.message}));
        diffBox.dataset.analysis = 'failed';
      });
      return redraw();
    }).catch(function (e) { if (alive(token)) { failBox(head, 'the comparison', e); ready(); } });
  }

  /* ====================================================================== */
  /* sweep view                                                              */
  /* ====================================================================== */
  var SWEEP_Y = [
    ['samples_per_s', 'samples/s', num, 1, ''], ['step_p50_s', 'step p50', dur, -1, 's'], ['duration_s', 'duration', dur, -1, 's'],
    ['cpu_util_pct', 'mean CPU', pct, 0, 'pct'], ['gpu_util_pct', 'mean GPU util', pct, 1, 'pct'], ['steps', 'steps', num, 0, 'int'],
    ['findings', 'findings', num, -1, 'int']];  /* key, name, format, better (1 higher, -1 lower), axis unit */
  function sweepView(token) {
    var q = route.q;
    busy();
    var s = section('Sweep', 'One summary figure against one parameter across an experiment\'s runs: which value of the parameter trains fastest.');
    var controls = h('div', {class: 'toolbar wrap'}), answer = h('p', {class: 'answer', id: 'sweep-answer'});
    var chartBox = h('div', {class: 'chart', id: 'sweep-chart'}), tableBox = h('div');
    add(s, [controls, answer, chartBox, tableBox]);
    app.appendChild(s);
    var all = [], chart = null;
    onCleanup(function () { if (chart) chart.destroy(); });
    function update(k, v) { var n = new URLSearchParams(q); if (v) n.set(k, v); else n.delete(k); q = n; setState(n); draw(); }
    function draw() {
      clear(controls); clear(answer); clear(tableBox); clear(chartBox);
      if (chart) { chart.destroy(); chart = null; }
      var exps = {};
      all.forEach(function (r) { if (r.experiment) exps[r.experiment] = (exps[r.experiment] || 0) + 1; });
      var en = Object.keys(exps).sort(), exp = q.get('experiment') || en[0] || '';
      var runs = all.filter(function (r) { return r.experiment === exp; });
      var keys = {};
      runs.forEach(function (r) { Object.keys(r.params || {}).forEach(function (k) { keys[k] = keys[k] || {}; keys[k][r.params[k]] = 1; }); });
      var kn = Object.keys(keys).sort(function (a, b) { return Object.keys(keys[b]).length - Object.keys(keys[a]).length || (a < b ? -1 : 1); });
      var par = q.get('param') || kn[0] || '';
      var yk = q.get('y') || 'samples_per_s';
      var Y = SWEEP_Y.filter(function (y) { return y[0] === yk; })[0] || SWEEP_Y[0];
      var es = h('select', {id: 'sweep-experiment', onchange: function () { var n = new URLSearchParams(); n.set('experiment', es.value); q = n; setState(n); draw(); }});
      en.forEach(function (e) { es.appendChild(option(e, e + ' (' + exps[e] + ' runs)', e === exp)); });
      var ps = h('select', {id: 'sweep-param', onchange: function () { update('param', ps.value); }});
      kn.forEach(function (k) { ps.appendChild(option(k, k, k === par)); });
      var ys = h('select', {id: 'sweep-y', onchange: function () { update('y', ys.value); }});
      SWEEP_Y.forEach(function (y) { ys.appendChild(option(y[0], y[1], y[0] === Y[0])); });
      add(controls, [h('label', null, h('span', {text: 'experiment'}), es), h('label', null, h('span', {text: 'parameter'}), ps),
        h('label', null, h('span', {text: 'figure'}), ys)]);
      if (!en.length) { answer.textContent = 'No run in this store has an experiment: record some with strobe run --experiment E --param K=V.'; ready(); return; }
      var pts = runs.filter(function (r) { return r.params && r.params[par] !== undefined; }).map(function (r) {
        return {r: r, p: r.params[par], y: r[Y[0]]};
      });
      if (!pts.length) { answer.textContent = 'The runs of ' + exp + ' have no parameters to sweep over.'; ready(); return; }
      var numeric = pts.every(function (p) { return p.p !== '' && isFinite(Number(p.p)); });
      var cats = Array.from(new Set(pts.map(function (p) { return p.p; }))).sort(function (a, b) { return numeric ? Number(a) - Number(b) : (a < b ? -1 : 1); });
      pts.forEach(function (p) { p.x = numeric ? Number(p.p) : cats.indexOf(p.p); });
      pts.sort(function (a, b) { return a.x - b.x; });
      /* one line through the mean of each value, the runs as points */
      var groups = cats.map(function (c) {
        var g = pts.filter(function (p) { return p.p === c && p.y !== null && p.y !== undefined; });
        return {p: c, x: numeric ? Number(c) : cats.indexOf(c), n: g.length, mean: g.length ? g.reduce(function (s, p) { return s + p.y; }, 0) / g.length : null};
      });
      var valid = groups.filter(function (g) { return g.mean !== null; });
      if (valid.length) {
        var best = valid.slice().sort(function (a, b) { return Y[3] >= 0 ? b.mean - a.mean : a.mean - b.mean; })[0];
        var worst = valid.slice().sort(function (a, b) { return Y[3] >= 0 ? a.mean - b.mean : b.mean - a.mean; })[0];
        add(answer, [Y[3] === 0 ? 'Highest ' : 'Best ', h('b', {text: Y[1]}), ': ', h('b', {text: par + '=' + best.p}), ' (' + Y[2](best.mean) + (best.n > 1 ? ', mean of ' + best.n + ' runs' : '') + ')',
          valid.length > 1 ? '; ' + (Y[3] === 0 ? 'lowest' : 'worst') + ' ' + par + '=' + worst.p + ' (' + Y[2](worst.mean) + ').' : '.']);
      } else answer.textContent = 'None of these runs has ' + Y[1] + '.';
      var xsAll = Array.from(new Set(pts.map(function (p) { return p.x; }))).sort(function (a, b) { return a - b; });
      var line = xsAll.map(function (x) { var g = groups.filter(function (g2) { return g2.x === x; })[0]; return g ? g.mean : null; });
      var dots = xsAll.map(function (x) { var g = pts.filter(function (p) { return p.x === x && p.y !== null; }); return g.length ? g[0].y : null; });
      var extra = [];
      var maxPer = Math.max.apply(null, xsAll.map(function (x) { return pts.filter(function (p) { return p.x === x; }).length; }));
      for (var k = 1; k < maxPer; k++) {
        extra.push(xsAll.map(function (x) { var g = pts.filter(function (p) { return p.x === x && p.y !== null; }); return g[k] ? g[k].y : null; }));
      }
      var ptStyle = {show: true, size: 9, stroke: '#2f6fdb', fill: '#fff', width: 2};
      var o = {
        title: Y[1] + ' against ' + par + ' (' + exp + ')', width: chartWidth(chartBox), height: 360,
        cursor: {drag: {x: false, y: false}},
        scales: {x: {time: false, range: function (u, mn, mx) { var p = (mx - mn) * 0.06 || 1; return [mn - p, mx + p]; }},
          y: {range: fromZero}},
        /* x: a tick at each value of the parameter, those that would overlap left unlabelled */
        axes: [{label: par, splits: function () { return xsAll; }, values: function (u, v, i) {
          return F.thin(u, i, v, numeric ? F.distinctLabels(v) : v.map(function (x) { return Number.isInteger(x) && cats[x] !== undefined ? cats[x] : ''; }));
        }}, F.axis(Y[4], {size: axisSize(50), label: Y[1]})],
        series: [{label: par, value: function (u, v) { return v === null ? '–' : numeric ? num(v) : cats[v]; }},
          {label: 'mean', stroke: '#2f6fdb', width: 2, spanGaps: true, value: function (u, v) { return Y[2](v); }, points: {show: false}},
          {label: 'run', stroke: '#2f6fdb', width: 0, paths: function () { return null; }, points: ptStyle, value: function (u, v) { return Y[2](v); }}]
          .concat(extra.map(function () { return {label: 'run', stroke: '#2f6fdb', width: 0, paths: function () { return null; }, points: ptStyle, value: function (u, v) { return Y[2](v); }}; }))
      };
      chart = new uPlot(o, [xsAll, line, dots].concat(extra), chartBox);
      chartBox.dataset.points = pts.length;
      var body = h('tbody');
      pts.forEach(function (p) {
        var b = valid.length && p.p === (valid.slice().sort(function (a, c) { return Y[3] >= 0 ? c.mean - a.mean : a.mean - c.mean; })[0]).p && Y[3] !== 0;
        body.appendChild(h('tr', {class: b ? 'best' : null}, h('td', {text: p.p}), h('td', null, h('a', {href: hashFor('run', p.r.id), text: p.r.name || shortId(p.r.id)})),
          h('td', null, h('span', {class: 'status ' + p.r.status, text: p.r.status})),
          SWEEP_Y.map(function (y) { return h('td', {class: 'num' + (y[0] === Y[0] ? ' hl' : ''), text: y[2](p.r[y[0]])}); })));
      });
      var ids = pts.map(function (p) { return p.r.id; }).slice(0, 16);
      tableBox.appendChild(h('div', {class: 'toolbar'}, h('a', {class: 'btn small', id: 'sweep-compare', href: hashFor('compare', '', new URLSearchParams({runs: ids.join(',')})), text: 'Compare these ' + ids.length + ' runs'})));
      tableBox.appendChild(h('table', {id: 'sweep-table'}, h('thead', null, h('tr', null, h('th', {text: par}), h('th', {text: 'run'}), h('th', {text: 'status'}),
        SWEEP_Y.map(function (y) { return h('th', {class: 'num', text: y[1]}); }))), body));
      ready();
    }
    api('/api/runs?limit=100000&sort=start').then(function (d) {
      if (!alive(token)) return;
      all = d.runs;
      draw();
    }).catch(function (e) { if (alive(token)) { failBox(s, 'the runs', e); ready(); } });
  }

  /* ====================================================================== */
  /* campaigns: strobe sweep's, as strobe sweep status shows them            */
  /* ====================================================================== */
  function campaignPath(name) { return '/api/campaigns/' + encodeURIComponent(name); }
  function progressBar(done, total) {
    var bar = h('div', {class: 'bar progress', title: done + ' of ' + total + ' workloads done'}), fill = h('div');
    fill.style.width = (total ? 100 * done / total : 0) + '%';
    fill.style.background = PAL[2];
    bar.appendChild(fill);
    return bar;
  }

  function campaignsView(token) {
    busy();
    var s = section('Campaigns', 'The campaigns of strobe sweep in this store, most recently updated first: ' +
      'how far each has come, and whether its sweep still runs.');
    var box = h('div');
    s.appendChild(box);
    app.appendChild(s);
    var timer = null;
    onCleanup(function () { clearTimeout(timer); });
    function load() {
      api('/api/campaigns').then(function (d) {
        if (!alive(token)) return;
        clear(box);
        var list = d.campaigns || [];
        if (!list.length) {
          box.appendChild(h('p', {class: 'empty', text: 'No campaign in this store: run one with strobe sweep FILE.'}));
        } else {
          var body = h('tbody');
          list.forEach(function (c) {
            var st = c.status || 'unreadable';
            body.appendChild(h('tr', {dataset: {name: c.name}},
              h('td', null, h('a', {class: 'campaign-link', href: hashFor('campaign', c.name), text: c.name})),
              h('td', null, h('span', {class: 'status ' + st, text: st})),
              h('td', {class: 'progress'}, c.error ? h('span', {class: 'muted', text: c.error}) :
                [progressBar(c.done, c.total), h('span', {class: 'done', text: c.done + ' of ' + c.total + ' workloads done'}),
                  c.running_workloads.length ? h('span', {class: 'muted now', text: ' · running ' + c.running_workloads.join(', ')}) : null]),
              h('td', {text: date(c.updated_ns)}),
              h('td', null, h('code', {text: c.file || '–'}))));
          });
          box.appendChild(h('table', {id: 'campaigns', class: 'runs'}, h('thead', null, h('tr', null,
            ['campaign', 'status', 'progress', 'updated', 'file'].map(function (t) { return h('th', {text: t}); }))), body));
        }
        clearTimeout(timer);
        if (list.some(function (c) { return c.running; })) timer = setTimeout(load, REFRESH_MS);
        ready();
      }).catch(function (e) { if (alive(token)) { clear(box); failBox(box, 'the campaigns', e); ready(); } });
    }
    load();
  }

  /* How a workload's runs share their devices: "-" (as they are), MPS, or
   * a MIG profile (each run a slice). */
  function collocationName(c) {
    if (!c || c === '-') return 'no sharing mechanism (-)';
    if (c === 'MPS') return 'MPS';
    return 'MIG ' + c;
  }
  function paramsText(p) {
    return Object.keys(p || {}).map(function (k) { return k + '=' + p[k]; }).join(' ');
  }
  /* A figure's cell: the text as the dashboard writes figures, the exact
   * value beside it (data-v) for whoever reads the page's numbers. */
  function figCell(v, text, key) {
    return h('td', {class: 'num', dataset: {k: key, v: v === null || v === undefined ? '' : String(v)}, text: text});
  }
  function ratio(v) { return v === null || v === undefined || !isFinite(v) ? F.NONE : v.toFixed(2) + '×'; }

  function campaignView(token) {
    var name = route.arg;
    busy();
    var head = h('div'), chartBox = h('div', {id: 'campaign-chart'}), groupsBox = h('div');
    var cs = section('Samples/s per device', 'Each workload\'s samples/s (all its runs together) over its devices ' +
      '(the host counts as one), grouped by how its runs share their devices.');
    cs.appendChild(chartBox);
    add(app, [head, cs, groupsBox]);
    document.title = 'strobe · campaign ' + name;
    var timer = null;
    onCleanup(function () { clearTimeout(timer); });

    function drawHead(d) {
      clear(head);
      var crumbs = h('div', {class: 'crumbs'}, h('a', {href: '#/campaigns', text: 'All campaigns'}),
        h('span', {class: 'sep', text: '›'}), h('span', {text: d.campaign}));
      var now = d.running_workloads || [];
      var prog = h('div', {class: 'campaign-progress'}, progressBar(d.done, d.total),
        h('span', {id: 'campaign-done', dataset: {done: d.done, total: d.total}, text: d.done + ' of ' + d.total + ' workloads done'}),
        now.length ? h('span', {id: 'campaign-now'}, ' · running now: ', now.map(function (w, i) {
          return [i ? ', ' : '', h('b', {text: 'workload ' + w})];
        })) : null,
        !d.running && d.owner && d.owner.pid ? h('span', {class: 'muted', text: ' · its sweep (pid ' + d.owner.pid +
          (d.owner.host ? ' on ' + d.owner.host : '') + ') is gone'}) : null);
      var best = d.workloads.filter(function (w) { return w.name === d.best; })[0];
      var answer = h('p', {class: 'answer', id: 'campaign-best'});
      if (best) {
        add(answer, ['Most samples/s per device: ', h('b', {text: 'workload ' + best.name}),
          ' (' + [best.collocation, best.runs.length > 1 ? 'collocated' : 'solo', paramsText(best.params)].filter(Boolean).join(', ') + '), ' +
          num(best.samples_per_s_per_device) + '.']);
      } else answer.textContent = 'No workload has finished with a samples/s figure yet.';
      add(head, h('section', {class: 'head'}, crumbs,
        h('div', {class: 'titleline'}, h('h1', {id: 'campaign-name', text: d.campaign}),
          h('span', {class: 'status ' + d.status, id: 'campaign-status', text: d.status})),
        h('dl', {class: 'kv'},
          h('dt', {text: 'file'}), h('dd', null, h('code', {text: d.file || '–'})),
          h('dt', {text: 'plan'}), h('dd', null, h('code', {text: d.spec_hash})),
          h('dt', {text: 'updated'}), h('dd', {text: date(d.updated_ns)})),
        prog, answer));
    }
    /* Collocation modes in order of first appearance, each with its
     * workloads in the campaign's order. */
    function groups(d) {
      var order = [], by = {};
      d.workloads.forEach(function (w) {
        if (!by[w.collocation]) { by[w.collocation] = []; order.push(w.collocation); }
        by[w.collocation].push(w);
      });
      return order.map(function (c) { return {collocation: c, workloads: by[c]}; });
    }
    /* The parameters whose values differ between workloads: what tells
     * one bar from another. */
    function varying(d) {
      var seen = {}, ran = d.workloads.filter(function (w) { return Object.keys(w.params || {}).length; });
      ran.forEach(function (w) {
        Object.keys(w.params).forEach(function (k) { (seen[k] = seen[k] || {})[w.params[k]] = 1; });
      });
      return Object.keys(seen).filter(function (k) {
        return Object.keys(seen[k]).length > 1 || ran.some(function (w) { return !(k in w.params); });
      });
    }
    /* A bar per workload, its length samples/s per device against the
     * highest, in one block per collocation mode. */
    function drawChart(d, gs) {
      clear(chartBox);
      var vals = d.workloads.map(function (w) { return w.samples_per_s_per_device; }).filter(function (v) { return v !== null; });
      if (!vals.length) { chartBox.appendChild(h('p', {class: 'empty', text: 'No workload has samples/s yet.'})); return; }
      var max = Math.max.apply(null, vals), keys = varying(d);
      gs.forEach(function (g, gi) {
        var block = h('div', {class: 'bar-group', dataset: {collocation: g.collocation}}, h('div', {class: 'bar-group-name', text: collocationName(g.collocation)}));
        g.workloads.forEach(function (w) {
          var v = w.samples_per_s_per_device, fill = h('div', {class: 'fill'});
          fill.style.width = (v === null ? 0 : Math.max(0.5, 100 * v / max)) + '%';
          fill.style.background = PAL[gi % PAL.length];
          block.appendChild(h('div', {class: 'bar-row' + (w.name === d.best ? ' best' : ''), dataset: {workload: w.name, v: v === null ? '' : String(v)}},
            h('span', {class: 'bar-label', title: paramsText(w.params)}, h('b', {text: w.name}),
              h('span', {class: 'muted', text: [w.runs.length > 1 ? w.runs.length + ' runs' : 'solo'].concat(keys.filter(function (k) {
                return w.params && k in w.params;
              }).map(function (k) { return k + '=' + w.params[k]; })).map(function (t) { return ' · ' + t; }).join('')})),
            h('span', {class: 'bar-track'}, fill),
            h('span', {class: 'bar-value', text: num(v) + (w.name === d.best ? ' ★' : '')})));
        });
        chartBox.appendChild(block);
      });
    }
    function drawGroups(d, gs) {
      clear(groupsBox);
      gs.forEach(function (g) {
        var s = section('Collocation: ' + collocationName(g.collocation));
        s.classList.add('colloc');
        s.dataset.collocation = g.collocation;
        var body = h('tbody');
        g.workloads.forEach(function (w) {
          /* by name, or by id where the names do not tell them apart */
          var details = w.run_details || [], names = details.map(function (r) { return r.name; });
          var runs = details.map(function (r, i) {
            var unique = r.name && names.indexOf(r.name) === names.lastIndexOf(r.name);
            return [i ? ' ' : '', h('a', {class: 'run-link', href: hashFor('run', r.id), title: (r.name || '') + ' ' + r.id + (r.status ? ' (' + r.status + ')' : ''),
              dataset: {id: r.id}, text: unique ? r.name : shortId(r.id)})];
          });
          var ps = Object.keys(w.params || {});
          body.appendChild(h('tr', {class: w.name === d.best ? 'best' : null, dataset: {workload: w.name}},
            h('td', {class: 'wl'}, w.name, w.name === d.best ? h('span', {class: 'chip best-mark', text: 'best per device'}) : null),
            h('td', null, h('span', {class: 'status ' + w.status, text: w.status}), w.note ? h('div', {class: 'muted note', text: w.note}) : null),
            h('td', {class: 'devices', text: w.devices || 'host'}),
            h('td', {class: 'runs'}, runs.length ? runs : h('span', {class: 'muted', text: '–'})),
            figCell(w.duration_s, w.runs.length ? dur(w.duration_s) : F.NONE, 'duration_s'),
            figCell(w.samples_per_s, num(w.samples_per_s), 'samples_per_s'),
            figCell(w.samples_per_s_per_device, num(w.samples_per_s_per_device), 'samples_per_s_per_device'),
            figCell(w.vs_solo, ratio(w.vs_solo), 'vs_solo'),
            figCell(w.step_p50_s, dur(w.step_p50_s), 'step_p50_s'),
            h('td', {class: 'num', dataset: {k: 'findings', v: String(w.findings)}},
              w.findings ? h('span', {class: 'count', text: String(w.findings)}) : '0'),
            h('td', {class: 'params'}, ps.length ? ps.map(function (k) { return h('span', {class: 'chip'}, h('b', {text: k}), '=' + w.params[k]); }) :
              h('span', {class: 'muted', text: '–'}))));
        });
        s.appendChild(h('table', {class: 'campaign'}, h('thead', null, h('tr', null,
          [['workload'], ['status'], ['devices'], ['runs'], ['duration', 1], ['samples/s', 1], ['per device', 1], ['vs solo', 1],
            ['step p50', 1], ['findings', 1], ['params']].map(function (c) { return h('th', {class: c[1] ? 'num' : null, text: c[0]}); }))), body));
        groupsBox.appendChild(s);
      });
    }
    function load() {
      api(campaignPath(name)).then(function (d) {
        if (!alive(token)) return;
        var gs = groups(d);
        drawHead(d);
        drawChart(d, gs);
        drawGroups(d, gs);
        clearTimeout(timer);
        if (d.running) timer = setTimeout(load, REFRESH_MS);
        ready();
      }).catch(function (e) {
        if (!alive(token)) return;
        clear(head); clear(chartBox); clear(groupsBox);
        failBox(head, 'campaign ' + name, e);
        ready();
      });
    }
    load();
  }

  window.addEventListener('hashchange', render);
  render();
})();
