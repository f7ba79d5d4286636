// The figures' formatting the dashboard and the report share
// (web/common/format.js), the file as it ships, run in node:
//   node web_format.js FORMAT_JS < CASES_JSON
// CASES_JSON is [[function, args...], ...] ('NaN' and 'null' stand for
// those); prints one JSON array of what
// each call returned, for tests/integration/test_web_format.py.
'use strict';
const fs = require('fs');
const vm = require('vm');

const ctx = {};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[2], 'utf8') + '\nthis.F = strobeFormat;', ctx);
const out = JSON.parse(fs.readFileSync(0, 'utf8')).map(([fn, ...args]) => {
  if (typeof ctx.F[fn] !== 'function') return 'no function ' + fn;
  return ctx.F[fn](...args.map((a) => (a === 'NaN' ? NaN : a === 'null' ? null : a)));
});
process.stdout.write(JSON.stringify(out) + '\n');
