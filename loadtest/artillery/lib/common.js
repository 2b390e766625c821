// Helpers shared by the scenario processors: settings from the environment, a strict status
// check that turns an unexpected answer into a failed virtual user (so it counts in the error
// rate that `ensure` checks), and a small fetch wrapper for the before/after hooks.
'use strict';

// A number from the environment, or the default; a malformed value stops the run at once
// rather than load-testing with a silently different setting.
function envNumber(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new Error(`${name} must be a non-negative number, not "${raw}"`);
  }
  return value;
}

function randomInt(n) {
  return Math.floor(Math.random() * n);
}

// Picks k distinct elements of an array (k capped at its length).
function sample(items, k) {
  const copy = items.slice();
  const out = [];
  while (out.length < k && copy.length > 0) out.push(copy.splice(randomInt(copy.length), 1)[0]);
  return out;
}

// At most this many unexpected answers are printed per process, so a failing run shows what
// went wrong without flooding the console.
let printed = 0;
const PRINT_LIMIT = 5;

function errorCode(body) {
  try {
    const parsed = typeof body === 'string' ? JSON.parse(body) : body;
    return (parsed && parsed.error && parsed.error.code) || (parsed && parsed.message) || '';
  } catch {
    return '';
  }
}

// afterResponse hook: the request's `okStatus` (a list; default [200]) are the expected
// answers. Anything else fails the virtual user with a low-cardinality message (the request's
// name, the status and the API's error code), which Artillery counts as errors.<message>.
function checkStatus(req, res, context, events, next) {
  const ok = Array.isArray(req.okStatus) ? req.okStatus.map(Number) : [200];
  if (ok.includes(res.statusCode)) return next();
  const name = req.name || `${req.method} ${new URL(req.url).pathname}`;
  const code = errorCode(res.body);
  if (printed < PRINT_LIMIT) {
    printed += 1;
    const body = typeof res.body === 'string' ? res.body.slice(0, 300) : JSON.stringify(res.body);
    console.error(`unexpected answer: ${req.method} ${req.url} -> ${res.statusCode} ${body}`);
  }
  return next(new Error(`unexpected ${res.statusCode}${code ? ` ${code}` : ''} on ${name}`));
}

// fetch for the hooks (before/after run once, outside the measured load): answers the parsed
// body, and throws with the request and the answer when the status is not the expected one.
async function call(target, method, path, { token, body, raw, headers: extra = {}, expect = [200] } = {}) {
  const headers = { 'content-type': 'application/json', ...extra };
  if (token) headers.authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(new URL(path, target), {
      method,
      headers,
      // `raw`: a body sent byte for byte (a signed one); else `body` as JSON.
      body: raw !== undefined ? raw : body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new Error(`${method} ${path}: ${err.cause ? err.cause.message || err.cause.code : err.message}`);
  }
  const text = await res.text();
  if (!expect.includes(res.status)) {
    throw new Error(`${method} ${path} answered ${res.status}, expected ${expect.join(' or ')}: ${text.slice(0, 300)}`);
  }
  return text ? JSON.parse(text) : null;
}

// Runs fn over items, at most `limit` at a time.
async function forEachLimited(items, limit, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  });
  await Promise.all(workers);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A short id for this run, so that its users and sales never collide with an earlier run's.
function newRunId() {
  return `${Date.now().toString(36)}${randomInt(36 ** 3).toString(36)}`;
}

module.exports = { envNumber, randomInt, sample, checkStatus, call, forEachLimited, sleep, newRunId };
