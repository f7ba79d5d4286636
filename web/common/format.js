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

  return {NONE: NONE, num: num, dur: dur, bytes: bytes, pct: pct, byUnit: byUnit, offsetRange: offsetRange};
})();
