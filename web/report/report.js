/* strobe report: draws the page from the JSON in #strobe-data (built by
 * src/render/report_data.c; docs/report.md). Every string from the run is
 * put in with textContent (el() below), never as markup. */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('strobe-data').textContent);
  var M = strobeMetrics; /* the catalog (src/common/metrics.def), which names the metrics */
  var APP_PREFIX = M.APP.name.slice(0, -1); /* 'app.*': the script's own series */
  var app = document.getElementById('app');
  var PAL = ['#2f6fdb', '#e07b00', '#2e9d5b', '#c62828', '#7b4fd0', '#0096a6', '#b5487f',
    '#7d8b00', '#8a6d3b', '#4c5a73'];
  var PHASE_COLORS = {data: '#e07b00', forward: '#2f6fdb', backward: '#7b4fd0',
    optimizer: '#2e9d5b', comm: '#c62828', other: '#9aa3b2'};
  var SEV_RANK = {high: 0, medium: 1, low: 2, info: 3};
  var charts = [];     /* every uPlot on the shared time axis */
  var syncing = false; /* a zoom being passed on to the others */

  /* ---- helpers --------------------------------------------------------- */
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      if (attrs[k] == null) return;
      if (k === 'class') e.className = attrs[k];
      else if (k === 'style') e.style.cssText = attrs[k];
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    });
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
  /* figures as the dashboard writes them: web/common/format.js */
  var F = strobeFormat, dur = F.dur, num = F.num, bytes = F.bytes, byUnit = F.byUnit;
  function share(x) { return F.pct(100 * x); }   /* a fraction as a percentage */
  function fmtTime(ns) { return new Date(ns / 1e6).toISOString().replace('T', ' ').slice(0, 19) + ' UTC'; }
  function key(s) { return s.name + (s.labels ? '{' + s.labels + '}' : ''); }
  function section(id, title, lead) {
    var s = el('section', {id: id}, el('h2', null, title), lead ? el('p', {class: 'lead'}, lead) : null);
    main.appendChild(s);
    toc.appendChild(el('a', {href: '#' + id}, title));
    return s;
  }
  function table(head, rows, numeric) {
    var t = el('table');
    t.appendChild(el('tr', null, head.map(function (h, i) {
      return el('th', numeric && numeric[i] ? {class: 'num'} : null, h);
    })));
    rows.forEach(function (r) {
      t.appendChild(el('tr', null, r.map(function (c, i) {
        return el('td', numeric && numeric[i] ? {class: 'num'} : null, c);
      })));
    });
    return t;
  }
  /* A figure the tests compare with strobe show --json: exact value kept. */
  function card(k, v, note, dataKey, dataValue) {
    var attrs = {class: 'card'};
    if (dataKey) { attrs['data-key'] = dataKey; attrs['data-value'] = String(dataValue); }
    return el('div', attrs, el('div', {class: 'k'}, k), el('div', {class: 'v'}, v),
      note ? el('div', {class: 'n'}, note) : null);
  }
  function stackedBar(parts) { /* [{label, value, color}] */
    var total = parts.reduce(function (a, p) { return a + Math.max(0, p.value); }, 0) || 1;
    var bar = el('div', {class: 'bar'});
    var leg = el('div', {class: 'legend'});
    parts.forEach(function (p) {
      var w = Math.max(0, p.value) / total;
      bar.appendChild(el('div', {style: 'width:' + (100 * w) + '%;background:' + p.color,
        title: p.label + ' ' + share(w)}));
      leg.appendChild(el('span', null, el('i', {style: 'background:' + p.color}),
        p.label + ' ' + share(w)));
    });
    return [bar, leg];
  }

  /* ---- page frame ------------------------------------------------------ */
  var R = D.run;
  var title = R.name || R.id;
  document.title = 'strobe report: ' + title;
  /* a run of several nodes: D.heatmaps (cpu.util and gpu.util per node),
   * the charts of D.nodes_drawn only (the first few), D.nodes for a job */
  var MULTI = !!D.nodes_total;
  var top = el('header', {class: 'top'}, el('h1', {id: 'run-name'}, title),
    el('div', {class: 'sub'}, 'run ' + R.id + (R.experiment ? ' · experiment ' + R.experiment : '') +
      ' · ' + R.status + ' · started ' + fmtTime(R.start_ns) + ' · ' +
      (MULTI ? D.nodes_total + ' nodes' : (R.host || '?'))));
  var toc = el('nav', {class: 'toc'});
  var main = el('main');
  app.appendChild(top);
  app.appendChild(toc);
  app.appendChild(main);

  var grid = D.grid, xs = new Float64Array(grid.n);
  for (var i = 0; i < grid.n; i++) xs[i] = (i + 0.5) * grid.width_ns / 1e9;
  var runEnd = D.summary.total_s;

  /* ---- summary ---------------------------------------------------------- */
  (function () {
    var s = section('summary', 'Job summary', 'Initialization is the run\'s start to its first ' +
      'step, the training loop the first step to the end of the last, finalization the rest.');
    var S = D.summary, st = D.steps;
    var cards = el('div', {class: 'cards'});
    cards.appendChild(card('Duration', dur(R.duration_s), null, 'duration_s', R.duration_s));
    cards.appendChild(card('Status', R.status, R.signal ? 'signal ' + R.signal :
      R.exit_code != null ? 'exit ' + R.exit_code : null, 'status', R.status));
    if (st) {
      cards.appendChild(card('Steps', String(st.count), 'rank ' + (st.rank >= 0 ? st.rank : F.NONE) +
        ', pid ' + st.pid, 'steps.count', st.count));
      cards.appendChild(card('Step p50', dur(st.p50_ns / 1e9), 'mean ' + dur(st.mean_ns / 1e9),
        'steps.p50_ns', st.p50_ns));
      cards.appendChild(card('Step p95', dur(st.p95_ns / 1e9), 'max ' + dur(st.max_ns / 1e9),
        'steps.p95_ns', st.p95_ns));
      cards.appendChild(card('Outliers', String(st.outliers), '> ' + dur(st.threshold_ms / 1e3) +
        ' (mean + 3σ)'));
    }
    cards.appendChild(card('Findings', String(D.findings.length), null, 'findings', D.findings.length));
    cards.appendChild(card('Samples', String(R.samples), 'every ' + dur(R.interval_ns / 1e9) +
      ', ' + R.missed + ' missed', 'samples', R.samples));
    s.appendChild(cards);
    if (S.first_step_s != null) {
      var init = S.first_step_s, loop = S.last_step_end_s - S.first_step_s,
        fin = Math.max(0, S.total_s - S.last_step_end_s);
      s.appendChild(el('h3', {style: 'font-size:14px;margin:16px 0 0'}, 'Where the time went'));
      add(s, stackedBar([{label: 'initialization ' + dur(init), value: init, color: '#9aa3b2'},
        {label: 'training loop ' + dur(loop), value: loop, color: '#2f6fdb'},
        {label: 'finalization ' + dur(fin), value: fin, color: '#e07b00'}]));
    } else {
      s.appendChild(el('p', {class: 'empty'}, 'No steps were recorded, so the run is not split ' +
        'into initialization, training loop and finalization.'));
    }
  })();

  /* ---- findings --------------------------------------------------------- */
  (function () {
    var s = section('findings', 'Findings', 'What the rules found, most severe first; click a ' +
      'time range to zoom every chart to it.');
    /* high ranks 0: `SEV_RANK[s] || 9` put the most severe last */
    function rank(s) { return Object.prototype.hasOwnProperty.call(SEV_RANK, s) ? SEV_RANK[s] : 9; }
    var f = D.findings.slice().sort(function (a, b) {
      return rank(a.severity) - rank(b.severity) || a.start_ns - b.start_ns;
    });
    if (!f.length) { s.appendChild(el('p', {class: 'empty'}, 'No rule fired.')); return; }
    s.appendChild(table(['Severity', 'Rule', 'When'].concat(MULTI ? ['Node'] : [], ['Evidence', 'Recommendation']), f.map(function (x) {
      var a = (x.start_ns - R.start_ns) / 1e9, b = (x.end_ns - R.start_ns) / 1e9;
      return [el('span', {class: 'sev ' + x.severity}, x.severity), el('b', null, x.rule),
        el('a', {class: 'range', onclick: function () { zoomTo(a, b); }},
          F.offsetRange(a, b))].concat(MULTI ? [F.labelValue(x.scope, 'node') || 'all'] : [],
        [x.evidence || '', x.recommendation || '']);
    })));
  })();

  /* ---- charts on one time axis ----------------------------------------- */
  function zoomTo(a, b) {
    var pad = Math.max((b - a) * 0.1, grid.width_ns / 1e9 * 2);
    charts.forEach(function (u) { u.setScale('x', {min: Math.max(0, a - pad), max: b + pad}); });
    document.getElementById('timeseries').scrollIntoView({behavior: 'smooth'});
  }
  function resetZoom() { charts.forEach(function (u) { u.setScale('x', {min: 0, max: runEnd}); }); }
  function chartWidth() { return Math.max(400, main.clientWidth - 48); }
  function passZoom(u, k) {
    if (k !== 'x' || syncing) return;
    syncing = true;
    var mn = u.scales.x.min, mx = u.scales.x.max;
    charts.forEach(function (o) { if (o !== u) o.setScale('x', {min: mn, max: mx}); });
    syncing = false;
  }
  function baseOpts(titleText, unit, height) {
    return {
      title: titleText, width: chartWidth(), height: height || 170,
      cursor: {sync: {key: 'strobe', setSeries: false}, drag: {x: true, y: false}},
      scales: {x: {time: false, min: 0, max: runEnd}},
      legend: {live: true},
      /* ticks and labels: web/common/format.js's axis() */
      axes: [F.axis('s'), F.axis(unit, {size: F.axisSize(50)})],
      hooks: {setScale: [passZoom]},
      series: [{value: function (u, v) { return v == null ? F.NONE : dur(v); }}]
    };
  }
  function lineChart(parent, titleText, list, unit) {
    if (!list.length) return;
    var o = baseOpts(titleText, unit), data = [xs];
    o.bands = [];
    list.forEach(function (s, n) {
      var c = PAL[n % PAL.length], label = s.label || key(s);
      var fmt = function (u, v) { return byUnit(v, s.unit); };
      if (s.v) {
        o.series.push({label: label, stroke: c, width: 1.5, value: fmt, spanGaps: false});
        data.push(s.v);
      } else { /* the envelope: highest and lowest value of each bucket */
        o.series.push({label: label + ' (max)', stroke: c, width: 1.2, value: fmt});
        o.series.push({label: label + ' (min)', stroke: c + '88', width: 0.8, value: fmt});
        o.bands.push({series: [data.length, data.length + 1], fill: c + '33'});
        data.push(s.hi, s.lo);
      }
    });
    var box = el('div', {class: 'chart', title: F.metricHelp(list[0].name) || null});
    parent.appendChild(box);
    charts.push(new uPlot(o, data, box));
  }
  function byName(name, pred) {
    return D.series.filter(function (s) { return s.name === name && (!pred || pred(s)); });
  }
  function busy(s) { return s.stats && s.stats.max > 0; }
  /* A heatmap (web/common/format.js) on the shared time axis: the
   * per-core one (a row per core), or a metric per node. */
  function heatChart(parent, titleText, names, rows, help, key) {
    var o = baseOpts(titleText, '', Math.min(640, F.heatHeight(names.length)));
    var data = F.heatmap(o, {names: names, rows: rows, start: 0, width: grid.width_ns / 1e9});
    var box = el('div', {class: 'chart', title: help || null, 'data-heatmap': key || null,
      'data-rows': String(names.length)});
    parent.appendChild(box);
    charts.push(new uPlot(o, data, box));
    return box;
  }
  function heatmap(parent, cores) {
    cores.sort(function (a, b) {
      return parseInt(a.labels.slice(5), 10) - parseInt(b.labels.slice(5), 10);
    });
    heatChart(parent, 'CPU per core (busy %, mean per bucket)', cores.map(function (c) {
      return 'core ' + c.labels.slice(5, c.labels.indexOf(',') > 0 ? c.labels.indexOf(',') : undefined);
    }), cores.map(function (c) { return c.mean; }), F.metricHelp(cores[0].name));
  }
  function stepChart(parent) {
    var st = D.steps;
    if (!st) return;
    var o = baseOpts('Step duration', 'ms');
    var ms = function (u, v) { return v == null ? F.NONE : dur(v / 1e3); };
    var data;
    if (st.t) {
      var out = st.ms.map(function (v) { return v > st.threshold_ms && st.outliers ? v : null; });
      o.series.push({label: 'step', stroke: '#2f6fdb', width: 1, value: ms, points: {show: false}});
      data = [st.t, st.ms, out];
    } else {
      var b = st.bins, bt = b.lo.map(function (_, i) { return b.t0 + (i + 0.5) * b.width; });
      var j = uPlot.join([[bt, b.hi, b.lo, b.mean], [st.outlier_t, st.outlier_ms]]);
      o.series.push({label: 'max', stroke: '#2f6fdb88', width: 1, value: ms, spanGaps: true});
      o.series.push({label: 'min', stroke: '#2f6fdb88', width: 1, value: ms, spanGaps: true});
      o.series.push({label: 'mean', stroke: '#2f6fdb', width: 1.5, value: ms, spanGaps: true});
      o.bands = [{series: [1, 2], fill: '#2f6fdb22'}];
      data = j;
    }
    o.series.push({label: 'outlier', stroke: '#c62828', fill: '#c62828', width: 0, value: ms,
      paths: function () { return null; }, points: {show: true, size: 6, stroke: '#c62828', fill: '#c62828'}});
    var box = el('div', {class: 'chart'});
    parent.appendChild(box);
    charts.push(new uPlot(o, data, box));
  }

  /* ---- nodes ---------------------------------------------------------- */
  if (MULTI) (function () {
    var s = section('nodes', 'Nodes', 'Each node of the run: its mean CPU and GPU utilization, ' +
      'and for a job its own run, status, span and clock. The heatmaps under Time series hold ' +
      'every node.');
    var cpu = (D.heatmaps || []).filter(function (h) { return h.metric === M.CPU_UTIL.name; })[0];
    var gpu = (D.heatmaps || []).filter(function (h) { return h.metric === M.GPU_UTIL.name; })[0];
    var mean = function (h, n) { var i = h ? h.nodes.indexOf(n) : -1; return i >= 0 ? h.node_mean[i] : null; };
    var rows, t;
    if (D.nodes) {
      rows = D.nodes.map(function (n) {
        return [el('code', null, n.node), n.host || F.NONE, n.status, '+' + dur((n.start_ns - R.start_ns) / 1e9),
          dur(n.duration_s), F.pct(n.cpu_util_pct), F.pct(n.gpu_util_pct), String(n.samples),
          n.clock_rtt_ns ? (n.clock_offset_ns / 1e6).toFixed(3) + ' ms (within ' + (n.clock_rtt_ns / 2e6).toFixed(3) + ')' : 'not measured'];
      });
      t = table(['Node', 'Host', 'Status', 'Start', 'Duration', 'CPU', 'GPU', 'Samples', 'Clock (store − node)'], rows,
        [0, 0, 0, 1, 1, 1, 1, 1, 1]);
    } else { /* an import of several nodes: the heatmaps' */
      var names = (cpu || gpu).nodes;
      rows = names.map(function (n) { return [el('code', null, n), F.pct(mean(cpu, n)), F.pct(mean(gpu, n))]; });
      t = table(['Node', 'CPU', 'GPU'], rows, [0, 1, 1]);
    }
    t.id = 'nodes-table';
    s.appendChild(t);
  })();

  (function () {
    var s = section('timeseries', 'Time series', 'Every chart shares one time axis (seconds since ' +
      'the start): drag across any chart to zoom them all. Long runs are shown as the lowest and ' +
      'highest value of each ' + dur(grid.width_ns / 1e9) + ' bucket, so no spike is lost.');
    var pick = null;
    if (MULTI) {
      pick = el('select', {id: 'node-pick', onchange: function () { drawNode(pick.value); }},
        D.nodes_drawn.map(function (n) { return el('option', {value: n}, n); }));
    }
    s.appendChild(el('div', {class: 'toolbar'}, el('button', {onclick: resetZoom}, 'Reset zoom'),
      D.series.length + ' series, ' + grid.n + ' buckets',
      pick ? el('label', null, 'charts of node ', pick, D.nodes_total > D.nodes_drawn.length ?
        ' (the first ' + D.nodes_drawn.length + ' of ' + D.nodes_total + ' nodes; the heatmaps hold them all)' : '') : null));
    var heat = el('div', {class: 'charts'}), c = el('div', {class: 'charts'});
    s.appendChild(heat);
    s.appendChild(c);
    (D.heatmaps || []).forEach(function (h) {
      var what = h.metric === M.GPU_UTIL.name ? 'GPU utilization' : h.metric === M.CPU_UTIL.name ? 'CPU utilization' : h.metric;
      heatChart(heat, what + ' per node (mean % per bucket: pale blue 0, dark red 100)', h.nodes, h.mean,
        F.metricHelp(h.metric), h.metric);
    });
    /* the charts of one node (every series when the run has one) */
    function drawNode(node) {
      for (var i = charts.length - 1; i >= 0; i--) {
        if (c.contains(charts[i].root)) { charts[i].destroy(); charts.splice(i, 1); }
      }
      while (c.firstChild) c.removeChild(c.firstChild);
      var mine = function (x) { return !MULTI || F.labelValue(x.labels, 'node') === node; };
      var drawn = function (x) { return x.lo || x.v || x.mean; };
      var byName = function (name, pred) {
        return D.series.filter(function (x) { return x.name === name && drawn(x) && mine(x) && (!pred || pred(x)); });
      };
      var noLabel = function (x) { return !F.labelsLess(x.labels, 'node'); };
      lineChart(c, 'CPU (% of all cores)', [M.CPU_UTIL, M.CPU_IOWAIT, M.CPU_SYSTEM, M.CPU_STEAL]
        .reduce(function (a, m) { return a.concat(byName(m.name, noLabel)); }, []), M.CPU_UTIL.unit);
      var cores = byName(M.CPU_UTIL.name, function (x) { return x.labels.indexOf('core=') === 0; });
      if (cores.length) heatmap(c, cores);
      [M.GPU_UTIL, M.GPU_MEM_USED_BYTES, M.GPU_POWER_W, M.GPU_TEMP_C, M.GPU_SM_ACTIVE].forEach(function (m) {
        var l = byName(m.name);
        if (l.length) lineChart(c, 'GPU ' + m.name.slice(4), l, l[0].unit);
      });
      lineChart(c, 'Memory', [M.MEM_USED_BYTES, M.MEM_AVAILABLE_BYTES, M.PROC_RSS_BYTES,
        M.CGROUP_MEM_USED_BYTES].reduce(function (a, m) { return a.concat(byName(m.name, noLabel)); }, []),
        M.MEM_USED_BYTES.unit);
      var busyOf = function (a, b) {
        return D.series.filter(function (x) { return (x.name === a.name || x.name === b.name) && busy(x) && drawn(x) && mine(x); });
      };
      lineChart(c, 'Disk', busyOf(M.DISK_READ_BYTES_PER_S, M.DISK_WRITE_BYTES_PER_S),
        M.DISK_READ_BYTES_PER_S.unit);
      lineChart(c, 'Network', busyOf(M.NET_RX_BYTES_PER_S, M.NET_TX_BYTES_PER_S), M.NET_RX_BYTES_PER_S.unit);
      lineChart(c, 'Process tree CPU (% of one core)', byName(M.PROC_CPU.name, noLabel), M.PROC_CPU.unit);
      D.series.filter(function (x) { return x.name.indexOf(APP_PREFIX) === 0 && drawn(x) && mine(x); }).forEach(function (x) {
        lineChart(c, 'Script: ' + key(x).slice(APP_PREFIX.length), [x], x.unit);
      });
      stepChart(c);
      c.dataset.node = node || '';
    }
    drawNode(MULTI ? D.nodes_drawn[0] : null);
  })();

  /* ---- steps ------------------------------------------------------------ */
  (function () {
    var st = D.steps;
    var s = section('steps', 'Step analysis', 'Duration of each training step of the primary ' +
      'process (rank 0, or the one with most steps); outliers are steps longer than mean + 3σ.');
    if (!st) { s.appendChild(el('p', {class: 'empty'}, 'No steps were recorded.')); return; }
    var g = el('div', {class: 'grid2'});
    s.appendChild(g);
    var h = st.hist, n = h.counts.length, w = (h.hi_ms - h.lo_ms) / n;
    var hx = h.counts.map(function (_, i) { return h.lo_ms + (i + 0.5) * w; });
    var box = el('div', {class: 'chart'});
    g.appendChild(box);
    new uPlot({title: 'Histogram of step durations', width: Math.max(300, chartWidth() / 2 - 20), height: 200,
      scales: {x: {time: false}}, legend: {show: false}, cursor: {drag: {x: false, y: false}},
      axes: [F.axis('ms'), F.axis('int', {size: F.axisSize(40)})],
      series: [{}, {label: 'steps', fill: '#2f6fdb99', stroke: '#2f6fdb',
        paths: uPlot.paths.bars({size: [0.92]})}]}, [hx, h.counts], box);
    g.appendChild(table(['Process', 'Steps', 'Mean', 'p50', 'p95', 'Max'], D.groups.map(function (x) {
      return [x.rank >= 0 ? 'rank ' + x.rank : 'pid ' + x.pid, String(x.count), dur(x.mean_ns / 1e9),
        dur(x.p50_ns / 1e9), dur(x.p95_ns / 1e9), dur(x.max_ns / 1e9)];
    }), [0, 1, 1, 1, 1, 1]));
    /* gradient accumulation, a closure optimizer or a GAN: not one pass a step */
    if (st.backward_passes && st.backward_per_step !== 1)
      s.appendChild(el('p', {'data-key': 'steps.backward_per_step', 'data-value': String(st.backward_per_step)},
        (+st.backward_per_step.toPrecision(3)) + ' backward passes per step (' + st.backward_passes + ' in all).'));
  })();

  /* ---- evaluation steps, apart from training ---------------------------- */
  (function () {
    var ev = D.eval_steps;
    if (!ev) return;
    var s = section('eval_steps', 'Evaluation steps', 'Iterations that ran forwards without ' +
      'autograd (torch.no_grad(), model.eval()) and no backward pass: counted apart, never ' +
      'in the training steps above.');
    s.appendChild(table(['Process', 'Eval steps', 'Mean', 'p50', 'p95', 'Max', 'Total'], [[
      ev.rank >= 0 ? 'rank ' + ev.rank : 'pid ' + ev.pid, String(ev.count), dur(ev.mean_ns / 1e9),
      dur(ev.p50_ns / 1e9), dur(ev.p95_ns / 1e9), dur(ev.max_ns / 1e9), dur(ev.total_ns / 1e9)]],
    [0, 1, 1, 1, 1, 1, 1]));
    s.lastChild.setAttribute('data-key', 'eval_steps.count');
    s.lastChild.setAttribute('data-value', String(ev.count));
    var tot = ev.phase_ns.reduce(function (a, b) { return a + b; }, 0) || 1;
    add(s, stackedBar(D.phase_names.map(function (p, i) {
      return {label: p, value: ev.phase_ns[i] / tot, color: PHASE_COLORS[p]};
    })));
  })();

  /* ---- phases ----------------------------------------------------------- */
  (function () {
    var s = section('phases', 'Phase breakdown', 'Share of step time in each phase (exclusive ' +
      'time: a collective inside backward counts as comm); what no phase covers is other.');
    if (!D.groups.length) { s.appendChild(el('p', {class: 'empty'}, 'No steps were recorded.')); return; }
    D.groups.forEach(function (g, gi) {
      var tot = g.phase_ns.reduce(function (a, b) { return a + b; }, 0) || 1;
      s.appendChild(el('div', {style: 'margin-top:8px', 'data-key': gi === D.primary ? 'phases' : null},
        el('b', null, g.rank >= 0 ? 'rank ' + g.rank : 'pid ' + g.pid), ' · ' + g.count + ' steps'));
      add(s, stackedBar(D.phase_names.map(function (p, i) {
        return {label: p, value: g.phase_ns[i] / tot, color: PHASE_COLORS[p]};
      })));
    });
  })();

  /* ---- data loader ------------------------------------------------------ */
  (function () {
    var L = D.dataloader;
    var s = section('dataloader', 'Data loader', 'Worker processes of the DataLoader and how ' +
      'long the training loop waited for its batches.');
    var cards = el('div', {class: 'cards'});
    cards.appendChild(card('Workers', String(L.workers), null, 'workers', L.workers));
    cards.appendChild(card('Waiting for data', share(L.data_share), 'of step time'));
    cards.appendChild(card('Workers busy', L.workers ? share(L.busy_ns / 1e9 / (R.duration_s * L.workers)) : F.NONE,
      'of the run, on average'));
    s.appendChild(cards);
    if (L.data_share > 0.2)
      s.appendChild(el('p', null, 'The loop waits for data ' + share(L.data_share) + ' of the time: ' +
        'more workers (num_workers), pin_memory, prefetching or faster storage would help.'));
    if (L.list.length)
      s.appendChild(table(['Worker', 'PID', 'Parent', 'Batches', 'Busy'], L.list.map(function (w) {
        return [String(w.worker_id), String(w.pid), String(w.ppid), String(w.batches), dur(w.busy_ns / 1e9)];
      }), [0, 1, 1, 1, 1]));
  })();

  /* ---- Python hotspots ------------------------------------------------- */
  /* D.flame: the run's flame data (docs/api.md), every role, phase and
   * state; the graph picks among them (web/common/flame.js). */
  if (D.flame && (D.flame.counts || []).length) (function () {
    var s = section('python', 'Python hotspots', 'Python stacks sampled from outside the job\'s ' +
      'processes: each frame is as wide as the samples it was on the stack in. Pick a role or a ' +
      'phase, tick idle to see waiting threads too, click a frame to zoom, search to sum a function\'s share.');
    strobeFlame.create(s, {data: D.flame});
  })();

  /* ---- operators ------------------------------------------------------- */
  if (D.ops.length) (function () {
    var s = section('operators', 'Top operators', 'Operators recorded by torch.profiler, by total time.');
    var all = D.ops.reduce(function (a, o) { return a + o.total_ns; }, 0) || 1;
    s.appendChild(table(['Operator', 'Calls', 'Total', 'Share', 'Mean', 'Max'], D.ops.map(function (o) {
      return [el('code', null, o.name), String(o.count), dur(o.total_ns / 1e9), share(o.total_ns / all),
        dur(o.total_ns / o.count / 1e9), dur(o.max_ns / 1e9)];
    }), [0, 1, 1, 1, 1, 1]));
  })();

  /* ---- system usage statistics ----------------------------------------- */
  (function () {
    /* many nodes: one node's at first, as the charts (thousands of rows) */
    var first = MULTI && D.nodes_total > D.nodes_drawn.length ? D.nodes_drawn[0] : '';
    var s = section('system', 'System usage statistics', 'Per metric over every sample of the ' +
      'run, ' + (MULTI ? 'of every node or of the one picked.' : 'node ' + (R.host || '?') + '.'));
    var list = D.series.filter(function (x) { return x.stats && x.stats.count; });
    var box = el('div');
    function draw(node) {
      while (box.firstChild) box.removeChild(box.firstChild);
      var rows = list.filter(function (x) { return !node || F.labelValue(x.labels, 'node') === node; }).map(function (x) {
        var t = x.stats, u = x.unit, own = MULTI ? F.labelsLess(x.labels, 'node') : x.labels;
        return [el('code', null, x.name + (own ? '{' + own + '}' : ''))].concat(MULTI ? [F.labelValue(x.labels, 'node') || F.NONE] : [],
          [byUnit(t.min, u), byUnit(t.p50, u), byUnit(t.p95, u), byUnit(t.p99, u), byUnit(t.max, u), byUnit(t.mean, u)]);
      });
      var t = table(['Metric'].concat(MULTI ? ['Node'] : [], ['Min', 'p50', 'p95', 'p99', 'Max', 'Mean']), rows,
        [0].concat(MULTI ? [0] : [], [1, 1, 1, 1, 1, 1]));
      t.id = 'stats-table';
      box.appendChild(t);
    }
    if (MULTI) {
      var names = [];
      list.forEach(function (x) { var n = F.labelValue(x.labels, 'node'); if (n !== null && names.indexOf(n) < 0) names.push(n); });
      var pick = el('select', {id: 'stats-node', onchange: function () { draw(pick.value); }},
        [el('option', {value: ''}, 'every node')].concat(names.map(function (n) { return el('option', {value: n}, n); })));
      pick.value = first;
      s.appendChild(el('div', {class: 'toolbar'}, el('label', null, 'node ', pick)));
    }
    s.appendChild(box);
    draw(first);
  })();

  /* ---- environment ------------------------------------------------------ */
  (function () {
    var s = section('environment', 'Environment', 'What ran, where, with what.');
    s.appendChild(el('div', {class: 'k muted'}, 'Command'));
    s.appendChild(el('pre', {id: 'command'}, R.command.join(' ')));
    var dl = el('dl', {class: 'kv'});
    function row(k, v) { if (v != null && v !== '') { dl.appendChild(el('dt', null, k)); dl.appendChild(el('dd', null, String(v))); } }
    row('Run', R.id); row('Name', R.name); row('Experiment', R.experiment);
    row('Status', R.status + (R.signal ? ' (signal ' + R.signal + ')' : R.exit_code != null ? ' (exit ' + R.exit_code + ')' : ''));
    row('Error', R.error);
    row('Started', fmtTime(R.start_ns)); row('Duration', dur(R.duration_s));
    row('Working directory', R.cwd); row('User', R.user); row('Host', R.host);
    row('Kernel', R.kernel); row('CPU', R.cpu_count + ' × ' + (R.cpu_model || '?'));
    row('Memory', bytes(R.mem_total_bytes));
    D.gpus.forEach(function (g, i) { row('GPU ' + (g.index != null ? g.index : i), [g.name, g.uuid,
      g.memory_total_bytes ? bytes(g.memory_total_bytes) : null, g.driver ? 'driver ' + g.driver : null]
      .filter(function (x) { return x; }).join(', ')); });
    row('Git', R.git_commit ? R.git_commit + (R.git_dirty > 0 ? ' (dirty)' : '') : null);
    row('Python', R.python_version); row('torch', R.torch_version); row('strobe', R.strobe_version);
    row('Sampling', 'every ' + dur(R.interval_ns / 1e9) + ', ' + R.samples + ' samples, ' +
      R.points + ' points, ' + R.dropped + ' dropped');
    row('Events', R.events + ' stored, ' + R.events_dropped + ' dropped');
    s.appendChild(dl);
    [['Parameters', R.params, 'params'], ['Tags', R.tags, 'tags'], ['Environment variables', R.env, 'env']]
      .forEach(function (p) {
        if (!p[1].length) return;
        s.appendChild(el('h3', {style: 'font-size:14px;margin:14px 0 4px'}, p[0]));
        var t = table(['Name', 'Value'], p[1].map(function (kv) { return [el('code', null, kv[0]), kv[1]]; }));
        t.id = p[2];
        s.appendChild(t);
      });
  })();

  window.addEventListener('resize', function () {
    charts.forEach(function (u) { u.setSize({width: chartWidth(), height: u.height}); });
  });
  window.strobeReport = {charts: charts.length, zoomTo: zoomTo};
  document.body.setAttribute('data-ready', '1');
})();
