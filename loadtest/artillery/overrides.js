// Prints the `artillery run --overrides` JSON for a scenario file from the environment, so
// that the scenario's own values stay the one place for the defaults:
//
//   node overrides.js follow.yml
//
//   ARRIVAL_RATE     steady-phase arrivals per second (the warm-up ramps up to it)
//   DURATION         steady-phase seconds
//   WARMUP           warm-up seconds (0 drops the warm-up phase)
//   P95_MS, P99_MS   ensure thresholds on http.response_time
//   MAX_ERROR_RATE   ensure's maxErrorRate, percent of failed virtual users
//
// Unset variables keep the file's values; with none set it prints {}.
'use strict';

const fs = require('node:fs');
const yaml = require('js-yaml');

function num(name) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    console.error(`${name} must be a non-negative number, not "${raw}"`);
    process.exit(2);
  }
  return value;
}

const file = process.argv[2];
const config = yaml.load(fs.readFileSync(file, 'utf8')).config;
const out = {};

const rate = num('ARRIVAL_RATE');
const duration = num('DURATION');
const warmup = num('WARMUP');
if (rate !== undefined || duration !== undefined || warmup !== undefined) {
  // The scenario files have a warm-up phase and a steady phase, by name.
  let phases = config.phases.map((p) => ({ ...p }));
  const steady = phases.find((p) => p.name === 'steady');
  const warm = phases.find((p) => p.name === 'warm-up');
  if (rate !== undefined) {
    if (rate === 0) {
      console.error('ARRIVAL_RATE must be above 0');
      process.exit(2);
    }
    steady.arrivalRate = rate;
    if (warm) warm.rampTo = rate;
    if (warm && warm.arrivalRate > rate) warm.arrivalRate = rate;
  }
  if (duration !== undefined) steady.duration = duration;
  if (warmup === 0) phases = phases.filter((p) => p !== warm);
  else if (warmup !== undefined && warm) warm.duration = warmup;
  out.phases = phases;
}

const p95 = num('P95_MS');
const p99 = num('P99_MS');
const maxErrorRate = num('MAX_ERROR_RATE');
if (p95 !== undefined || p99 !== undefined || maxErrorRate !== undefined) {
  const ensure = JSON.parse(JSON.stringify(config.plugins.ensure));
  ensure.thresholds = ensure.thresholds.map((t) => {
    if (p95 !== undefined && 'http.response_time.p95' in t) return { 'http.response_time.p95': p95 };
    if (p99 !== undefined && 'http.response_time.p99' in t) return { 'http.response_time.p99': p99 };
    return t;
  });
  if (maxErrorRate !== undefined) ensure.maxErrorRate = maxErrorRate;
  out.plugins = { ensure };
}

console.log(JSON.stringify(Object.keys(out).length ? { config: out } : {}));
