/* strobe's interactive flame graph of Python stack samples, shared by the
 * report, the dashboard's run page and `strobe flame --format html`.
 *
 * Input is the flame data of a run (src/pyprof/view.c, docs/api.md): the
 * frames, the stacks as lists of frame indexes (root first), the roles,
 * phases and thread states, and counts [stack, role, phase, state, n]. The
 * page builds a tree for the role, phase and states picked (on-CPU, i.e.
 * "running", unless idle is ticked) and draws it as an icicle on a canvas:
 * root on top, each frame as wide as its samples. Children narrower than a
 * pixel are never laid out one by one: they are drawn as one grey block, so
 * a profile of 50,000 nodes costs what its visible part does.
 *
 * Every string of the data (a function may be called anything) reaches the
 * page through textContent or the canvas's fillText, never as markup.
 *
 * Usage: var w = strobeFlame.create(parent); w.setData(flameData);
 * setData again (a running run, refreshed) keeps the role, phase, idle,
 * search and zoom the user picked. */
var strobeFlame = (function () {
  'use strict';
  var ROW = 18;          /* px per stack level */
  var MIN_PX = 1;        /* frames narrower than this are aggregated */
  var TOP_ROWS = 30;     /* functions in the table */
  var NO_FRAME = '(no Python frame)';
  var uid = 0;

  function h(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined) return;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    });
    for (var i = 2; i < arguments.length; i++) if (arguments[i]) e.appendChild(arguments[i]);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function pct(x) { return isFinite(x) ? (100 * x).toFixed(1) + ' %' : '–'; }
  function str(v) { return typeof v === 'string' ? v : v === null || v === undefined ? '' : String(v); }

  /* ---- the tree ---------------------------------------------------------- */

  /* A frame as the page reads it, whatever the data holds. */
  function frameOf(D, i) {
    var f = Array.isArray(D.frames) ? D.frames[i] : null;
    if (!Array.isArray(f)) return null;
    return {func: str(f[0]) || '?', file: str(f[1]), line: Number(f[2]) || 0};
  }
  function frameKey(f) { return f.func + '\u0000' + f.file + '\u0000' + f.line; }

  function newNode(frame, key, parent) {
    return {frame: frame, key: key, parent: parent, self: 0, total: 0, states: {},
      kids: new Map(), sorted: null, depth: parent ? parent.depth + 1 : 0};
  }

  /* The tree of the counts that pass sel ({role, phase: a name or null,
   * idle: bool}). Indexes out of range (a garbled store) are skipped. */
  function build(D, sel) {
    var root = newNode({func: 'all', file: '', line: 0}, '', null);
    var frames = [], keys = [];
    var nf = Array.isArray(D.frames) ? D.frames.length : 0;
    for (var i = 0; i < nf; i++) {
      frames.push(frameOf(D, i));
      keys.push(frames[i] ? frameKey(frames[i]) : null);
    }
    var roleIdx = sel.role === null ? -1 : (D.roles || []).indexOf(sel.role);
    var phaseIdx = sel.phase === null ? -1 : (D.phases || []).indexOf(sel.phase);
    var states = D.states || [];
    var noFrame = {func: NO_FRAME, file: '', line: 0};
    (D.counts || []).forEach(function (c) {
      if (!Array.isArray(c) || c.length < 5) return;
      var n = Number(c[4]);
      if (!(n > 0)) return;
      if (sel.role !== null && c[1] !== roleIdx) return;
      if (sel.phase !== null && c[2] !== phaseIdx) return;
      var state = str(states[c[3]]) || '?';
      if (!sel.idle && state !== 'running') return;
      var stack = (D.stacks || [])[c[0]];
      if (!Array.isArray(stack)) return;
      var node = root;
      add(node, n, state);
      var path = stack.length ? stack : [-1];
      for (var j = 0; j < path.length; j++) {
        var fi = path[j], key = fi === -1 ? NO_FRAME : keys[fi];
        if (key === null || key === undefined) continue;
        var kid = node.kids.get(key);
        if (!kid) { kid = newNode(fi === -1 ? noFrame : frames[fi], key, node); node.kids.set(key, kid); }
        node = kid;
        add(node, n, state);
      }
      node.self += n;
    });
    return root;
  }
  function add(node, n, state) {
    node.total += n;
    node.states[state] = (node.states[state] || 0) + n;
  }
  /* Children, heaviest first (left heavy): the tiny ones come last, together. */
  function kidsOf(node) {
    if (!node.sorted) {
      node.sorted = Array.from(node.kids.values()).sort(function (a, b) {
        return b.total - a.total || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
      });
    }
    return node.sorted;
  }
  function waiting(node) { return node.total - (node.states.running || 0); }

  /* Per function: self, and total counted once per sample however often
   * the function recurses in its stack. */
  function topFunctions(root) {
    var by = new Map(), onStack = new Map();
    (function walk(node) {
      var k = node.key, f = by.get(k);
      if (!f) { f = {frame: node.frame, self: 0, total: 0}; by.set(k, f); }
      f.self += node.self;
      var depth = onStack.get(k) || 0;
      if (!depth) f.total += node.total;
      onStack.set(k, depth + 1);
      node.kids.forEach(walk);
      onStack.set(k, depth);
    })(root);
    by.delete('');
    return Array.from(by.values());
  }

  /* The samples under any frame matching re, each once (a match below a
   * match is inside it already). */
  function matchedSamples(root, re) {
    var n = 0;
    (function walk(node) {
      if (node !== root && matches(node, re)) { n += node.total; return; }
      node.kids.forEach(walk);
    })(root);
    return n;
  }
  function matches(node, re) { return re.test(node.frame.func) || re.test(node.frame.file); }

  function pathOf(node) {
    var p = [];
    for (var n = node; n && n.parent; n = n.parent) p.unshift(n.key);
    return p;
  }
  function follow(root, path) {
    var node = root;
    for (var i = 0; i < path.length; i++) {
      var kid = node.kids.get(path[i]);
      if (!kid) break;
      node = kid;
    }
    return node;
  }

  /* ---- colours ------------------------------------------------------------- */

  function hash(s) {
    var x = 2166136261;
    for (var i = 0; i < s.length; i++) { x ^= s.charCodeAt(i); x = Math.imul(x, 16777619); }
    return (x >>> 0) / 4294967296;
  }
  /* Warm for on-CPU frames (as flamegraph.pl), blue for frames that mostly
   * wait, magenta for search matches; the hue within follows the name so a
   * function keeps its colour from one refresh to the next. */
  function colour(node, re) {
    var t = hash(node.frame.func);
    if (re && matches(node, re)) return 'rgb(' + Math.round(200 + 40 * t) + ',40,' + Math.round(190 + 50 * t) + ')';
    if (node.frame.func === NO_FRAME) return '#b8bec9';
    if (waiting(node) * 2 > node.total)
      return 'rgb(' + Math.round(80 + 50 * t) + ',' + Math.round(140 + 50 * t) + ',' + Math.round(200 + 40 * t) + ')';
    return 'rgb(' + Math.round(205 + 50 * t) + ',' + Math.round(90 + 110 * t) + ',' + Math.round(40 * t) + ')';
  }

  /* ---- the widget ---------------------------------------------------------- */

  function create(parent, opts) {
    opts = opts || {};
    var id = 'flame' + (++uid);
    var D = null, root = null, zoom = null;
    var sel = {role: null, phase: null, idle: false};
    var zoomPath = [], searchText = '', sortBy = 'self';
    var rects = [];   /* what was drawn: {node, x, w, depth, agg} */
    var rows = [];    /* rects by depth, for hovering */

    var roleSel = h('select', {id: id + '-role', 'aria-label': 'role', onchange: function () { sel.role = roleSel.value === '\u0000' ? null : roleSel.value; rebuild(); }});
    var phaseSel = h('select', {id: id + '-phase', 'aria-label': 'phase', onchange: function () { sel.phase = phaseSel.value === '\u0000' ? null : phaseSel.value; rebuild(); }});
    var idleBox = h('input', {type: 'checkbox', id: id + '-idle', class: 'flame-idle', onchange: function () { sel.idle = idleBox.checked; rebuild(); }});
    var search = h('input', {type: 'search', class: 'flame-search', placeholder: 'search function or file', 'aria-label': 'search',
      oninput: function () { searchText = search.value; draw(); }});
    var reset = h('button', {type: 'button', class: 'flame-reset', text: 'Reset zoom', onclick: function () { zoomTo(root); }});
    var summary = h('span', {class: 'flame-summary'});
    var found = h('span', {class: 'flame-found', 'aria-live': 'polite'});
    var crumbs = h('div', {class: 'flame-crumbs'});
    var canvas = h('canvas', {class: 'flame-canvas', tabindex: '0', role: 'img',
      'aria-label': 'flame graph: click a frame to zoom into it, Escape to zoom out'});
    var tip = h('div', {class: 'flame-tip', role: 'tooltip'});
    tip.hidden = true;
    var topBox = h('div', {class: 'flame-top'});
    var label = function (text, input) { return h('label', null, h('span', {text: text}), input); };
    var box = h('div', {class: 'flame', id: id},
      h('div', {class: 'flame-bar'}, label('role', roleSel), label('phase', phaseSel),
        h('label', null, idleBox, h('span', {text: 'idle (waiting threads too)'})), search, reset, summary),
      h('div', {class: 'flame-bar'}, found),
      h('div', {class: 'flame-main'}, h('div', {class: 'flame-graph'}, crumbs, canvas, tip), topBox));
    parent.appendChild(box);

    function options(s, values, current) {
      clear(s);
      s.appendChild(h('option', {value: '\u0000', text: 'all'}));
      values.forEach(function (v) {
        var o = h('option', {value: str(v), text: str(v)});
        s.appendChild(o);
      });
      s.value = current === null ? '\u0000' : current;
      if (s.value !== (current === null ? '\u0000' : current)) s.value = '\u0000';
    }
    function searchRe() {
      var t = searchText.trim();
      if (!t) return null;
      return new RegExp(t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    }

    function setData(data) {
      D = data || {};
      var roles = Array.isArray(D.roles) ? D.roles : [], phases = Array.isArray(D.phases) ? D.phases : [];
      if (sel.role !== null && roles.indexOf(sel.role) < 0) sel.role = null;
      if (sel.phase !== null && phases.indexOf(sel.phase) < 0) sel.phase = null;
      options(roleSel, roles, sel.role);
      options(phaseSel, phases, sel.phase);
      idleBox.checked = sel.idle;
      rebuild();
    }
    function rebuild() {
      root = build(D, sel);
      zoom = follow(root, zoomPath);
      box.dataset.total = String(root.total);
      var iv = Number(D.interval_ns) || 0;
      summary.textContent = root.total + ' samples' + (iv > 0 ? ' (≈ ' + (root.total * iv / 1e9).toFixed(2) + ' s of thread time)' : '') +
        (sel.idle ? ', running and waiting' : ', on CPU');
      drawTop();
      draw();
    }
    function zoomTo(node) {
      zoom = node || root;
      zoomPath = pathOf(zoom);
      draw();
    }

    /* ---- drawing ---- */
    function layout(width) {
      rects = []; rows = [];
      var push = function (r) { rects.push(r); (rows[r.depth] = rows[r.depth] || []).push(r); };
      var chain = [];
      for (var n = zoom; n; n = n.parent) chain.unshift(n);
      chain.forEach(function (n, d) { push({node: n, x: 0, w: width, depth: d, agg: 0}); });
      (function kids(node, x, w, depth) {
        if (!node.total) return;
        var scale = w / node.total, cx = x, tinyX = -1, tinyN = 0, tinyS = 0;
        kidsOf(node).forEach(function (k) {
          var kw = k.total * scale;
          if (kw < MIN_PX) {
            if (tinyX < 0) tinyX = cx;
            tinyN++; tinyS += k.total;
          } else {
            push({node: k, x: cx, w: kw, depth: depth, agg: 0});
            kids(k, cx, kw, depth + 1);
          }
          cx += kw;
        });
        if (tinyN && cx - tinyX >= 0.5)
          push({node: node, x: tinyX, w: cx - tinyX, depth: depth, agg: tinyN, samples: tinyS});
      })(zoom, 0, width, chain.length);
    }
    function draw() {
      if (!root) return;
      var width = Math.max(200, Math.floor(canvas.parentNode.clientWidth || 800));
      layout(width);
      var depth = rows.length || 1, dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(depth * ROW * dpr);
      canvas.style.width = width + 'px';
      canvas.style.height = depth * ROW + 'px';
      var g = canvas.getContext('2d');
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, width, depth * ROW);
      g.font = '12px ui-monospace, SFMono-Regular, Menlo, monospace';
      g.textBaseline = 'middle';
      var re = searchRe(), zoomDepth = zoom.depth;
      rects.forEach(function (r) {
        var y = r.depth * ROW;
        g.fillStyle = r.agg ? '#d5d9e0' : r.depth < zoomDepth ? '#e4e7ec' : colour(r.node, re);
        g.fillRect(r.x, y, Math.max(r.w - 0.5, 0.5), ROW - 1);
        if (r.agg || r.w < 24) return;
        var name = r.depth === 0 ? 'all' : r.node.frame.func, room = r.w - 6;
        var text = name;
        if (g.measureText(text).width > room) {
          var keep = Math.floor(room / 7.2) - 1;
          text = keep > 1 ? name.slice(0, keep) + '…' : '';
        }
        g.fillStyle = '#1d2330';
        if (text) g.fillText(text, r.x + 3, y + ROW / 2);
      });
      drawCrumbs();
      if (re) {
        var n = matchedSamples(root, re);
        found.textContent = 'search "' + searchText.trim() + '": ' + n + ' samples, ' + pct(root.total ? n / root.total : 0) + ' of the total';
        box.dataset.searchSamples = String(n);
      } else {
        found.textContent = '';
        delete box.dataset.searchSamples;
      }
      box.dataset.zoom = zoomPath.length ? zoom.frame.func : '';
    }
    function drawCrumbs() {
      clear(crumbs);
      var chain = [];
      for (var n = zoom; n; n = n.parent) chain.unshift(n);
      chain.forEach(function (node, i) {
        if (i) crumbs.appendChild(h('span', {class: 'sep', text: ' › '}));
        crumbs.appendChild(h('button', {type: 'button', class: 'link', text: i ? node.frame.func : 'all',
          onclick: function () { zoomTo(node); }}));
      });
    }
    function at(ev) {
      var b = canvas.getBoundingClientRect();
      var x = ev.clientX - b.left, row = rows[Math.floor((ev.clientY - b.top) / ROW)];
      if (!row) return null;
      for (var i = 0; i < row.length; i++) if (x >= row[i].x && x < row[i].x + row[i].w) return row[i];
      return null;
    }
    function tipLines(r) {
      var total = root.total || 1;
      if (r.agg) return [r.agg + ' frames too narrow to draw', r.samples + ' samples, ' + pct(r.samples / total) + ' of total'];
      var n = r.node, f = n.frame, lines = [f.func];
      if (f.file) lines.push(f.file + ':' + f.line);
      lines.push(n.total + ' samples (' + n.self + ' in itself)');
      lines.push(pct(n.total / total) + ' of total');
      if (n.parent) lines.push(pct(n.total / (n.parent.total || 1)) + ' of parent');
      var st = Object.keys(n.states).sort();
      if (sel.idle || st.some(function (s) { return s !== 'running'; }))
        lines.push(st.map(function (s) { return s + ' ' + n.states[s]; }).join(' · '));
      return lines;
    }
    function showTip(r, ev) {
      if (!r) { tip.hidden = true; return; }
      clear(tip);
      tipLines(r).forEach(function (l, i) { tip.appendChild(h('div', {class: i ? null : 'flame-tip-name', text: l})); });
      tip.hidden = false;
      var b = canvas.parentNode.getBoundingClientRect();
      var x = ev.clientX - b.left + 14, y = ev.clientY - b.top + 14;
      if (x + tip.offsetWidth > b.width) x = Math.max(0, ev.clientX - b.left - tip.offsetWidth - 10);
      tip.style.left = x + 'px';
      tip.style.top = y + 'px';
    }
    canvas.addEventListener('mousemove', function (ev) { showTip(at(ev), ev); });
    canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
    canvas.addEventListener('click', function (ev) {
      var r = at(ev);
      if (r && !r.agg) zoomTo(r.node);
    });
    canvas.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape' || ev.key === 'Backspace') { ev.preventDefault(); zoomTo(zoom.parent || root); }
    });

    /* ---- the table of top functions ---- */
    function drawTop() {
      clear(topBox);
      var total = root.total || 1;
      var list = topFunctions(root).sort(function (a, b) {
        return sortBy === 'self' ? b.self - a.self || b.total - a.total : b.total - a.total || b.self - a.self;
      }).slice(0, TOP_ROWS);
      var sortButton = function (k, text) {
        return h('button', {type: 'button', class: 'link' + (sortBy === k ? ' on' : ''), 'aria-pressed': sortBy === k ? 'true' : 'false', text: text,
          onclick: function () { sortBy = k; drawTop(); }});
      };
      var head = h('tr', null, h('th', {text: 'function'}), h('th', {text: 'file:line'}),
        h('th', {class: 'num'}, sortButton('self', 'self')), h('th', {class: 'num'}, sortButton('total', 'total')));
      var body = h('tbody');
      list.forEach(function (f) {
        var name = h('button', {type: 'button', class: 'link', title: 'search for this function', text: f.frame.func,
          onclick: function () { search.value = f.frame.func; searchText = f.frame.func; draw(); }});
        body.appendChild(h('tr', null, h('td', {class: 'fn'}, name),
          h('td', {class: 'file', text: f.frame.file ? f.frame.file + ':' + f.frame.line : ''}),
          h('td', {class: 'num', 'data-samples': String(f.self), text: pct(f.self / total)}),
          h('td', {class: 'num', 'data-samples': String(f.total), text: pct(f.total / total)})));
      });
      topBox.appendChild(h('table', {class: 'flame-table'}, h('thead', null, head), body));
      if (!list.length) topBox.appendChild(h('p', {class: 'empty', text: 'No samples for this choice.'}));
    }

    var resizeTimer = null;
    function onResize() { clearTimeout(resizeTimer); resizeTimer = setTimeout(draw, 100); }
    window.addEventListener('resize', onResize);
    if (opts.data) setData(opts.data);

    var widget = {
      element: box,
      setData: setData,
      /* for the tests: what is drawn, and the tree's figures */
      rects: function () {
        return rects.map(function (r) {
          return {func: r.agg ? null : r.node.frame.func, x: r.x, w: r.w, depth: r.depth, agg: r.agg, total: r.agg ? r.samples : r.node.total};
        });
      },
      total: function () { return root ? root.total : 0; },
      /* a page that leaves the graph (the dashboard's next view) */
      destroy: function () {
        window.removeEventListener('resize', onResize);
        clearTimeout(resizeTimer);
        var all = window.strobeFlameGraphs, i = all.indexOf(widget);
        if (i >= 0) all.splice(i, 1);
      }
    };
    /* every graph of the page, for the browser tests (flame_browser.js) */
    (window.strobeFlameGraphs = window.strobeFlameGraphs || []).push(widget);
    return widget;
  }

  return {create: create, build: build, topFunctions: topFunctions};
})();
