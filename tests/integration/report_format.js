// The report's number formatting (web/report/report.js: fmtBytes, fmtDur,
// fmtNum), each function taken from the file as it ships and run in node:
//   node report_format.js REPORT_JS
// Prints one JSON object {input: text} for tests/integration/test_report.py.
'use strict';
const fs = require('fs');
const vm = require('vm');

const src = fs.readFileSync(process.argv[2], 'utf8');
function take(name) {
  // from "  function NAME(" to the first line that is "  }" after it
  const at = src.indexOf('  function ' + name + '(');
  if (at < 0) throw new Error('no function ' + name);
  const end = src.indexOf('\n  }\n', at);
  return src.slice(at, end + 4);
}
const ctx = {};
vm.createContext(ctx);
vm.runInContext(['fmtBytes', 'fmtDur', 'fmtNum'].map(take).join('\n') +
  '\nthis.f = {fmtBytes: fmtBytes, fmtDur: fmtDur, fmtNum: fmtNum};', ctx);
const out = {};
for (const v of [3.5e15, 2e12, 999960, 999.96e6, 12345, 99.96, 0.5])
  out['num ' + v] = ctx.f.fmtNum(v);
for (const v of [0.0009996, 0.99996, 9.9996, 59.97, 119.7, 3599.6, 7199.9, 0.25])
  out['dur ' + v] = ctx.f.fmtDur(v);
for (const v of [1023.7, 1010 * 1048576, 1023.7 * 1048576, 9.996 * 1024, 512])
  out['bytes ' + v] = ctx.f.fmtBytes(v);
process.stdout.write(JSON.stringify(out) + '\n');
