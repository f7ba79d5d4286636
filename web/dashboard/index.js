// Placeholder for the dashboard: lists the runs. Every value goes in as
// text (textContent), never as HTML, so a run's name cannot inject markup.
'use strict';

function cell(row, text) {
  const td = document.createElement('td');
  td.textContent = text === null || text === undefined ? '-' : String(text);
  row.appendChild(td);
}

function seconds(s) {
  return s === null || s === undefined ? null : s.toFixed(s < 10 ? 3 : 1) + ' s';
}

fetch('/api/runs' + window.location.search)
  .then((r) => (r.ok ? r.json() : Promise.reject(new Error('HTTP ' + r.status))))
  .then((data) => {
    const body = document.querySelector('#runs tbody');
    for (const run of data.runs) {
      const row = document.createElement('tr');
      cell(row, run.id.slice(0, 8));
      cell(row, run.name);
      cell(row, run.experiment);
      cell(row, run.status);
      cell(row, seconds(run.duration_s));
      cell(row, run.steps);
      cell(row, seconds(run.step_p50_s));
      cell(row, run.findings);
      body.appendChild(row);
    }
  })
  .catch((e) => {
    document.getElementById('error').textContent = 'cannot list runs: ' + e.message;
  });
