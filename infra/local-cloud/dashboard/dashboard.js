// The live dashboard: polls the runner's /_local/dashboard/data every two seconds and draws
// small SVG line charts and tables from it. Plain JavaScript, no library, no build step.
'use strict';

const DATA_URL = '/_local/dashboard/data';
const REFRESH_MS = 2000;
const SVG_NS = 'http://www.w3.org/2000/svg';
// Tableau 10: distinguishable, also for the common colour-vision deficiencies.
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
  '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#79706e'];
const MAX_SERIES = 10;

let updates = 0;

function el(name, attributes = {}, text) {
  const node = document.createElement(name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgEl(name, attributes = {}, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function fmt(value) {
  if (!Number.isFinite(value)) return '–';
  const abs = Math.abs(value);
  if (abs >= 1e6) return (value / 1e6).toFixed(1) + 'M';
  if (abs >= 1e4) return (value / 1e3).toFixed(1) + 'k';
  if (abs >= 100 || Number.isInteger(value)) return String(Math.round(value));
  if (abs >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function clock(second) {
  return new Date(second * 1000).toLocaleTimeString([], { hour12: false });
}

/** The smallest round number at or above `value`, for the top of a y axis. */
function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (step * power >= value) return step * power;
  }
  return 10 * power;
}

/** A point for every second of the window, zero where nothing happened (a rate). */
function perSecond(seconds, value, now, window) {
  const byTime = new Map(seconds.map((s) => [s.t, value(s)]));
  const points = [];
  for (let t = now - window + 1; t <= now; t++) points.push([t, byTime.get(t) || 0]);
  return points;
}

/** Points only where there is a sample (a level or a percentile). */
function sampled(seconds, value) {
  return seconds.map((s) => [s.t, value(s)]);
}

/** Keeps the busiest series when there are too many to tell apart. */
function busiest(series) {
  const total = (s) => s.points.reduce((sum, [, v]) => sum + v, 0);
  const ranked = [...series].sort((a, b) => total(b) - total(a) || a.name.localeCompare(b.name));
  return { shown: ranked.slice(0, MAX_SERIES), hidden: Math.max(0, ranked.length - MAX_SERIES) };
}

/**
 * Draws a line chart into `figure`: `spec` has title, yLabel, unit, empty (what to say when
 * there is no data), now, window and series [{name, points: [[second, value]]}].
 */
function lineChart(figure, spec) {
  let caption = figure.querySelector('figcaption');
  if (!caption) {
    caption = el('figcaption');
    figure.prepend(caption);
  }
  caption.id = figure.id + '-title';
  const { shown, hidden } = busiest(spec.series.filter((s) => s.points.length > 0));
  caption.textContent = spec.title + (hidden ? ` (the ${MAX_SERIES} busiest of ${shown.length + hidden})` : '');
  let plot = figure.querySelector('.plot');
  if (!plot) {
    plot = el('div', { class: 'plot' });
    figure.append(plot);
  }

  const width = 640, height = 240;
  const margin = { left: 60, right: 30, top: 12, bottom: 42 };
  const innerW = width - margin.left - margin.right;
  const innerH = height - margin.top - margin.bottom;
  const from = spec.now - spec.window + 1;
  let top = 0;
  for (const s of shown) for (const [, v] of s.points) top = Math.max(top, v);
  top = niceMax(top);
  const x = (t) => margin.left + ((t - from) / (spec.window - 1)) * innerW;
  const y = (v) => margin.top + innerH - (Math.max(0, v) / top) * innerH;

  const summary = shown.length === 0
    ? spec.empty
    : shown.map((s) => {
      const values = s.points.map(([, v]) => v);
      return `${s.name}: last ${fmt(values[values.length - 1])}, max ${fmt(Math.max(...values))} ${spec.unit}`;
    }).join('; ');
  const svg = svgEl('svg', {
    viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-labelledby': `${figure.id}-svg-title ${figure.id}-svg-desc`,
    'data-series-count': shown.length,
  });
  svg.append(svgEl('title', { id: `${figure.id}-svg-title` }, spec.title));
  svg.append(svgEl('desc', { id: `${figure.id}-svg-desc` }, summary));

  for (let i = 0; i <= 4; i++) {
    const value = (top * i) / 4;
    svg.append(svgEl('line', { class: i ? 'grid' : 'axis', x1: margin.left, x2: width - margin.right, y1: y(value), y2: y(value) }));
    svg.append(svgEl('text', { x: margin.left - 6, y: y(value) + 4, 'text-anchor': 'end' }, fmt(value)));
  }
  svg.append(svgEl('line', { class: 'axis', x1: margin.left, x2: margin.left, y1: margin.top, y2: margin.top + innerH }));
  for (let t = spec.now; t >= from; t -= 60) {
    svg.append(svgEl('line', { class: 'axis', x1: x(t), x2: x(t), y1: margin.top + innerH, y2: margin.top + innerH + 4 }));
    svg.append(svgEl('text', { x: x(t), y: margin.top + innerH + 16, 'text-anchor': 'middle' }, clock(t)));
  }
  svg.append(svgEl('text', { x: margin.left + innerW / 2, y: height - 4, 'text-anchor': 'middle' }, 'time (local clock)'));
  svg.append(svgEl('text', {
    x: 0, y: 0, 'text-anchor': 'middle',
    transform: `translate(14 ${margin.top + innerH / 2}) rotate(-90)`,
  }, spec.yLabel));

  if (shown.length === 0) {
    svg.append(svgEl('text', { class: 'empty', x: margin.left + innerW / 2, y: margin.top + innerH / 2, 'text-anchor': 'middle' }, spec.empty));
  }
  const legend = el('ul', { class: 'legend' });
  shown.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length];
    const points = s.points.filter(([t]) => t >= from);
    const values = points.map(([, v]) => v);
    const d = points.map(([t, v], j) => `${j ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join('');
    const path = svgEl('path', {
      class: 'series', d, stroke: colour,
      'data-series': s.name,
      'data-max': Math.max(0, ...values),
      'data-last': values.length ? values[values.length - 1] : 0,
    });
    path.append(svgEl('title', {}, s.name));
    svg.append(path);
    if (points.length === 1) {
      svg.append(svgEl('circle', { cx: x(points[0][0]), cy: y(points[0][1]), r: 3, fill: colour }));
    }
    const item = el('li');
    item.append(el('span', { class: 'swatch', style: `background:${colour}`, 'aria-hidden': 'true' }));
    item.append(document.createTextNode(`${s.name}: last ${fmt(values[values.length - 1])}, max ${fmt(Math.max(...values))} ${spec.unit}`));
    legend.append(item);
  });
  plot.replaceChildren(svg, legend);
}

function fillTable(table, rows) {
  const body = table.tBodies[0];
  body.replaceChildren(...rows);
}

function cell(text, className) {
  return el('td', className ? { class: className } : {}, text);
}

function drawFunctions(data) {
  const { now, window } = data;
  const functions = [...data.functions].sort((a, b) =>
    b.invocations - a.invocations || a.name.localeCompare(b.name));
  fillTable(document.getElementById('function-table'), functions.map((f) => {
    const row = el('tr', { 'data-function': f.name, class: f.invocations ? '' : 'idle' });
    row.append(el('th', { scope: 'row' }, f.name));
    const m = f.lastMinute;
    row.append(cell(String(f.invocations), 'number invocations'), cell(String(f.errors), 'number errors'),
      cell(String(f.throttles), 'number throttles'), cell(String(m.invocations), 'number last-minute'),
      cell(m.invocations ? fmt(m.p50) : '–', 'number p50'), cell(m.invocations ? fmt(m.p95) : '–', 'number p95'),
      cell(m.invocations ? fmt(m.p99) : '–', 'number p99'));
    return row;
  }));

  lineChart(document.getElementById('chart-invocations'), {
    title: 'Invocations per second, per function', yLabel: 'invocations / s', unit: '/s',
    empty: 'No invocations in the window', now, window,
    series: functions.filter((f) => f.seconds.some((s) => s.invocations > 0))
      .map((f) => ({ name: f.name, points: perSecond(f.seconds, (s) => s.invocations, now, window) })),
  });

  const failing = [];
  for (const f of functions) {
    if (f.seconds.some((s) => s.errors > 0)) failing.push({ name: `${f.name} errors`, points: perSecond(f.seconds, (s) => s.errors, now, window) });
    if (f.seconds.some((s) => s.throttles > 0)) failing.push({ name: `${f.name} throttles`, points: perSecond(f.seconds, (s) => s.throttles, now, window) });
  }
  lineChart(document.getElementById('chart-errors'), {
    title: 'Errors and throttles per second', yLabel: 'per second', unit: '/s',
    empty: 'No errors and no throttles in the window', now, window, series: failing,
  });

  const select = document.getElementById('duration-function');
  const active = functions.filter((f) => f.seconds.some((s) => s.invocations > 0));
  const chosen = active.some((f) => f.name === select.value) ? select.value : (active[0] || {}).name;
  select.replaceChildren(...active.map((f) => el('option', { value: f.name }, f.name)));
  if (chosen) select.value = chosen;
  const f = active.find((g) => g.name === chosen);
  const busy = f ? f.seconds.filter((s) => s.invocations > 0) : [];
  lineChart(document.getElementById('chart-durations'), {
    title: `Duration percentiles${f ? ' of ' + f.name : ''}, per second`, yLabel: 'milliseconds', unit: 'ms',
    empty: 'No invocations in the window', now, window,
    series: f ? ['p50', 'p95', 'p99'].map((p) => ({ name: p, points: sampled(busy, (s) => s[p]) })) : [],
  });
}

function drawQueues(data) {
  const { now, window } = data;
  fillTable(document.getElementById('queue-table'), data.queues.map((q) => {
    const last = q.seconds[q.seconds.length - 1];
    const row = el('tr', { 'data-queue': q.name });
    row.append(el('th', { scope: 'row' }, q.name), cell(q.dlq ? 'dead-letter queue' : 'queue'),
      cell(last ? String(last.visible) : '–', 'number visible'),
      cell(last ? String(last.inFlight) : '–', 'number in-flight'));
    return row;
  }));
  lineChart(document.getElementById('chart-queues'), {
    title: 'Queue depth (visible + in flight messages)', yLabel: 'messages', unit: 'messages',
    empty: 'No samples yet (sampled while this page is open)', now, window,
    series: data.queues.filter((q) => !q.dlq)
      .map((q) => ({ name: q.name, points: sampled(q.seconds, (s) => s.visible + s.inFlight) })),
  });
  lineChart(document.getElementById('chart-dlqs'), {
    title: 'Dead-letter queues: messages', yLabel: 'messages', unit: 'messages',
    empty: 'No samples yet (sampled while this page is open)', now, window,
    series: data.queues.filter((q) => q.dlq)
      .map((q) => ({ name: q.name, points: sampled(q.seconds, (s) => s.visible + s.inFlight) })),
  });
}

function drawStreams(data) {
  const { now, window } = data;
  const name = (s) => `${s.table} → ${s.function}`;
  lineChart(document.getElementById('chart-stream-lag'), {
    title: 'Stream lag: age of the oldest record handed to the function', yLabel: 'milliseconds', unit: 'ms',
    empty: 'No stream records handed over in the window', now, window,
    series: data.streams.map((s) => ({ name: name(s), points: sampled(s.seconds, (x) => x.maxAgeMs) })),
  });
  lineChart(document.getElementById('chart-stream-records'), {
    title: 'Stream records handed over per second', yLabel: 'records / s', unit: '/s',
    empty: 'No stream records handed over in the window', now, window,
    series: data.streams.filter((s) => s.seconds.length > 0)
      .map((s) => ({ name: name(s), points: perSecond(s.seconds, (x) => x.records, now, window) })),
  });
}

function slug(text) {
  return text.replace(/[^A-Za-z0-9]+/g, '-');
}

function dimensionsName(dimensions) {
  const pairs = Object.entries(dimensions);
  return pairs.length ? pairs.map(([k, v]) => `${k}=${v}`).join(', ') : '(no dimensions)';
}

function drawMetrics(data) {
  const { now, window } = data;
  const emf = data.emf;
  let summary = `${emf.lines} metric lines read, ${emf.metrics.length} metrics.`;
  if (emf.problems) summary += ` ${emf.problems} problems; the last: ${emf.lastProblem}.`;
  if (emf.dropped) summary += ` ${emf.dropped} samples dropped (too many dimension values).`;
  document.getElementById('emf-summary').textContent = emf.lines ? summary : 'No metric lines yet.';
  const container = document.getElementById('metric-charts');
  for (const metric of emf.metrics) {
    const id = `metric-${slug(metric.namespace)}-${slug(metric.name)}`;
    let figure = document.getElementById(id);
    if (!figure) {
      figure = el('figure', { class: 'chart', id, 'data-metric': metric.name });
      if (metric.kind === 'distribution') {
        const select = el('select', { id: `${id}-statistic` });
        for (const [value, label] of [['p50', 'p50'], ['p95', 'p95'], ['p99', 'p99'], ['count', 'samples per second']]) {
          select.append(el('option', { value }, label));
        }
        select.value = 'p95';
        figure.append(el('label', { for: select.id }, 'Statistic'), select);
      }
      container.append(figure);
    }
    const unit = metric.unit && metric.unit !== 'None' ? metric.unit : '';
    const title = `${metric.namespace} · ${metric.name}`;
    if (metric.kind === 'distribution') {
      const statistic = figure.querySelector('select').value;
      const isCount = statistic === 'count';
      lineChart(figure, {
        title: `${title}: ${isCount ? 'samples per second' : statistic + ' per second'}`,
        yLabel: isCount ? 'samples / s' : (unit || 'value'), unit: isCount ? '/s' : unit,
        empty: 'No samples in the window', now, window,
        series: metric.series.map((s) => ({
          name: dimensionsName(s.dimensions),
          points: isCount ? perSecond(s.seconds, (x) => x.count, now, window) : sampled(s.seconds, (x) => x[statistic]),
        })),
      });
    } else {
      lineChart(figure, {
        title: `${title}: sum per second`, yLabel: `${unit || 'count'} / s`, unit: '/s',
        empty: 'Nothing in the window', now, window,
        series: metric.series.map((s) => ({ name: dimensionsName(s.dimensions), points: perSecond(s.seconds, (x) => x.sum, now, window) })),
      });
    }
  }
}

let latest = null;

function draw(data) {
  latest = data;
  document.getElementById('window').textContent = `${Math.round(data.window / 60)} minutes`;
  drawFunctions(data);
  drawQueues(data);
  drawStreams(data);
  drawMetrics(data);
}

async function refresh() {
  const status = document.getElementById('status');
  try {
    const response = await fetch(DATA_URL, { cache: 'no-store' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const data = await response.json();
    draw(data);
    updates += 1;
    document.body.dataset.updates = String(updates);
    const minute = data.functions.reduce((sum, f) => sum + f.lastMinute.invocations, 0);
    status.textContent = `Updated ${clock(data.now)}: ${data.functions.length} functions, ${minute} invocations in the last minute.`;
    status.classList.remove('failing');
  } catch (error) {
    status.textContent = `The runner is not answering (${error.message}); retrying every ${REFRESH_MS / 1000} s.`;
    status.classList.add('failing');
  }
  setTimeout(refresh, REFRESH_MS);
}

document.addEventListener('change', (event) => {
  if (event.target instanceof HTMLSelectElement && latest) draw(latest);
});
refresh();
