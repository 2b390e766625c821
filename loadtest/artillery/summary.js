// A short summary of an Artillery JSON report (`artillery run --output`):
//
//   node summary.js REPORT.json [SECKILL_CHECK.json] [--markdown]
//
// Prints requests/s, p50/p95/p99, errors and per-route figures; for the flash sale also the
// order outcomes and the after hook's verdict. Exits 1 when the flash-sale check failed or the
// 202s counted during the load differ from the stock, so callers can rely on the status.
'use strict';

const fs = require('node:fs');

const args = process.argv.slice(2);
const markdown = args.includes('--markdown');
const [reportFile, checkFile] = args.filter((a) => a !== '--markdown');
const report = JSON.parse(fs.readFileSync(reportFile, 'utf8')).aggregate;
const counters = report.counters || {};
const summaries = report.summaries || {};

const seconds = Math.max(1, (report.lastCounterAt - report.firstCounterAt) / 1000);
const requests = counters['http.requests'] || 0;
const rt = summaries['http.response_time'] || {};
const errors = Object.entries(counters).filter(([k]) => k.startsWith('errors.'));
const created = counters['vusers.created'] || 0;
const failed = counters['vusers.failed'] || 0;
const codes = Object.entries(counters)
  .filter(([k]) => k.startsWith('http.codes.'))
  .map(([k, v]) => `${k.slice('http.codes.'.length)}: ${v}`)
  .join(', ');

const ms = (v) => (v === undefined ? '-' : `${v} ms`);
const lines = [];
const out = (s = '') => lines.push(s);

// Per-route figures from the metrics-by-endpoint plugin (the requests' `name`s).
const prefix = 'plugins.metrics-by-endpoint.response_time.';
const routes = Object.keys(summaries)
  .filter((k) => k.startsWith(prefix))
  .map((k) => [k.slice(prefix.length), summaries[k]])
  .sort((a, b) => b[1].count - a[1].count);

if (markdown) {
  out(`| requests | duration | requests/s | p50 | p95 | p99 | max | status codes | virtual users (failed) |`);
  out('|---|---|---|---|---|---|---|---|---|');
  out(
    `| ${requests} | ${seconds.toFixed(1)} s | ${(requests / seconds).toFixed(1)} | ${ms(rt.median)} | ${ms(rt.p95)} | ` +
      `${ms(rt.p99)} | ${ms(rt.max)} | ${codes} | ${created} (${failed}) |`
  );
  out();
  out('| route | requests | p50 | p95 | p99 |');
  out('|---|---|---|---|---|');
  for (const [name, s] of routes) out(`| \`${name}\` | ${s.count} | ${ms(s.median)} | ${ms(s.p95)} | ${ms(s.p99)} |`);
} else {
  out(`requests:      ${requests} in ${seconds.toFixed(1)} s = ${(requests / seconds).toFixed(1)} requests/s`);
  out(`latency:       p50 ${ms(rt.median)}, p95 ${ms(rt.p95)}, p99 ${ms(rt.p99)}, max ${ms(rt.max)}`);
  out(`status codes:  ${codes || 'none'}`);
  out(`virtual users: ${created} created, ${failed} failed (${created ? ((100 * failed) / created).toFixed(2) : 0}%)`);
  out(`errors:        ${errors.length ? errors.map(([k, v]) => `${k.slice(7)} x${v}`).join('; ') : 'none'}`);
  for (const [name, s] of routes) {
    out(`  ${name.padEnd(40)} ${String(s.count).padStart(6)} req  p50 ${ms(s.median)}, p95 ${ms(s.p95)}, p99 ${ms(s.p99)}`);
  }
}

let status = 0;
const orderCounters = Object.entries(counters).filter(([k]) => k.startsWith('seckill.orders.'));
if (orderCounters.length || checkFile) {
  const outcomes = orderCounters.map(([k, v]) => `${k.slice('seckill.orders.'.length)} ${v}`).join(', ');
  out();
  out(`${markdown ? '**Orders.** ' : 'orders:        '}${outcomes || 'none placed'}`);
  if (checkFile) {
    if (markdown) out();
    if (!fs.existsSync(checkFile)) {
      out('flash-sale check: no verdict was written (did the after hook run?)');
      status = 1;
    } else {
      const check = JSON.parse(fs.readFileSync(checkFile, 'utf8'));
      // Orders of one or more units: the units of the 202s must add up to the stock.
      const accepted = counters['seckill.orders.accepted'] || 0;
      const units = counters['seckill.units.accepted'] || 0;
      const paid = counters['seckill.payments.paid'] || 0;
      if (!check.ok) {
        out(`${markdown ? '**Check.** ' : 'check:         '}FAILED: ${check.message}`);
        status = 1;
      } else if (units !== check.stock) {
        out(
          `${markdown ? '**Check.** ' : 'check:         '}FAILED: ${units} units in ${accepted} orders accepted (202) ` +
            `for a stock of ${check.stock}`
        );
        status = 1;
      } else {
        out(
          `${markdown ? '**Check.** ' : 'check:         '}ok: ${units} units in ${accepted} orders accepted (202) = ` +
            `stock ${check.stock}; ${paid} paid online through signed callbacks; sale ${check.finalState}; ` +
            `materialized ${JSON.stringify(check.byStatus)}`
        );
      }
    }
  }
}

console.log(lines.join('\n'));
process.exit(status);
