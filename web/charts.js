// Tributary's charts: line charts drawn as inline SVG, with no dependencies and nothing loaded from
// the network. One copy serves both pages that plot a run: the coordinator's live dashboard
// (dashboard.js) and tributary-sim's report.html (report.js); both embed it (web/CMakeLists.txt).
//
//   TributaryCharts.lineChart(container, {
//     id: 'accuracy', title: 'Accuracy by round', xLabel: 'round', yFormat: 'percent',
//     logX: false, series: [{name: 'server', color: '#1f77b4', points: [[1, 0.71], [2, 0.78]]}]});
//
// The chart replaces the container's contents. Its <svg> carries data-chart (the id) and
// data-points (the number of points drawn, all series); each point is a <circle class="point">
// with a <title> giving its values. Formats: 'percent' (0..1 shown as %), 'bytes' (KiB, MiB, ...:
// powers of 1024), 'seconds' (µs, ms, s, min, h), 'number'; an axis of bytes or seconds has round
// ticks in one unit. integerX: true puts ticks on whole numbers only (rounds). formatBytes and
// formatDuration are exported for the pages' own text. Points whose x or y is not a
// finite number are left out.
(function (global) {
  'use strict';
  const NS = 'http://www.w3.org/2000/svg';

  function node(name, attrs, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // Bytes and durations in the unit that fits, by the rules of core/human_units.h (FormatBytes,
  // FormatDuration): "780 B", "1.5 KiB", "760.0 MiB"; "412 µs", "2.1 ms", "250 ms", "2.30 s",
  // "42.2 s", "2.5 min", "1.5 h". The unit is chosen after rounding (1048575 B is "1.0 MiB").
  const BYTE_UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  function formatBytes(b) {
    if (!Number.isFinite(b)) return 'n/a';
    if (b < 0) return '-' + formatBytes(-b);
    if (Math.round(b) < 1024) return Math.round(b) + ' B';
    let v = b / 1024, i = 0;
    while (Math.round(v * 10) >= 10240 && i < BYTE_UNITS.length - 1) { v /= 1024; ++i; }
    return v.toFixed(1) + ' ' + BYTE_UNITS[i];
  }
  function formatDuration(s) {
    if (!Number.isFinite(s)) return 'n/a';
    if (s < 0) return '-' + formatDuration(-s);
    if (s === 0) return '0 s';
    const ms = 1000 * s;
    if (Math.round(ms * 1000) < 1000) return (ms * 1000).toFixed(0) + ' \u00b5s';
    if (Math.round(ms * 10) < 100) return ms.toFixed(1) + ' ms';
    if (Math.round(ms) < 1000) return ms.toFixed(0) + ' ms';
    if (Math.round(s * 100) < 1000) return s.toFixed(2) + ' s';
    if (Math.round(s * 10) < 600) return s.toFixed(1) + ' s';
    if (Math.round(s / 6) < 600) return (s / 60).toFixed(1) + ' min';
    return (s / 3600).toFixed(1) + ' h';
  }

  function formatValue(v, kind) {
    if (kind === 'percent') return (100 * v).toFixed(Math.abs(v) < 0.1 ? 1 : 0) + '%';
    if (kind === 'bytes') return formatBytes(v);
    if (kind === 'seconds') return formatDuration(v);
    if (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0)) return v.toExponential(1);
    return Number.isInteger(v) ? String(v) : v.toFixed(Math.abs(v) < 1 ? 3 : 2);
  }

  // The unit an axis of bytes or seconds is labelled in, from the largest value it shows: the
  // ticks are round numbers of that unit (0, 200, 400 KiB; not 195.3 KiB). {div: 1, name: ''}
  // for other formats.
  function axisUnit(kind, max) {
    if (kind === 'bytes') {
      let div = 1, i = -1;
      while (max / div >= 1024 && i < BYTE_UNITS.length - 1) { div *= 1024; ++i; }
      return {div, name: i < 0 ? 'B' : BYTE_UNITS[i]};
    }
    if (kind === 'seconds') {
      if (max >= 7200) return {div: 3600, name: 'h'};
      if (max >= 120) return {div: 60, name: 'min'};
      if (max >= 1) return {div: 1, name: 's'};
      if (max >= 1e-3) return {div: 1e-3, name: 'ms'};
      return {div: 1e-6, name: '\u00b5s'};
    }
    return {div: 1, name: ''};
  }
  // A tick's label: a round number of the axis's unit, without trailing zeros ("0.5", not "0.500").
  function tickLabel(v, kind, unit) {
    if (unit.name) return Number((v / unit.div).toPrecision(6)) + ' ' + unit.name;
    if (kind === 'percent' || kind === 'bytes' || kind === 'seconds') return formatValue(v, kind);
    if (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0)) return v.toExponential(1);
    return String(Number(v.toPrecision(6)));
  }

  // About n round-numbered ticks covering [lo, hi] (whole numbers only, with `integer`).
  function tickStep(lo, hi, n, integer) {
    const span = hi - lo;
    const step0 = Math.pow(10, Math.floor(Math.log10(span / n)));
    const err = (n * step0) / span;
    const step = step0 * (err <= 0.15 ? 10 : err <= 0.35 ? 5 : err <= 0.75 ? 2 : 1);
    return integer ? Math.max(1, Math.round(step)) : step;
  }

  function ticks(lo, hi, n, integer) {
    const step = tickStep(lo, hi, n, integer);
    const out = [];
    const first = Math.ceil(lo / step - 1e-9);
    for (let k = first; k * step <= hi + step * 1e-9; ++k) out.push(Number((k * step).toPrecision(12)));
    return out;
  }

  function lineChart(container, spec) {
    const W = 520, H = 300, L = 64, R = 16, T = 48, B = 46;
    const series = (spec.series || []).map(s => ({
      name: s.name, color: s.color || '#1f77b4',
      points: (s.points || []).filter(p => Number.isFinite(p[0]) && Number.isFinite(p[1]) &&
                                           (!spec.logX || p[0] > 0)),
    }));
    const fx = x => (spec.logX ? Math.log10(x) : x);
    const svg = node('svg', {
      xmlns: NS, width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', class: 'chart',
      'data-chart': spec.id || '', 'aria-label': spec.title || '',
    });
    svg.appendChild(node('rect', {width: W, height: H, fill: 'white'}));
    svg.appendChild(node('text', {x: W / 2, y: 21, 'text-anchor': 'middle', class: 'title'}, spec.title));
    const all = series.flatMap(s => s.points);
    svg.setAttribute('data-points', String(all.length));
    container.replaceChildren(svg);
    if (all.length === 0) {
      svg.appendChild(node('text', {x: W / 2, y: H / 2, 'text-anchor': 'middle', class: 'empty'},
                           spec.empty || 'no data yet'));
      return svg;
    }
    let x0 = Math.min(...all.map(p => fx(p[0]))), x1 = Math.max(...all.map(p => fx(p[0])));
    let y0 = Math.min(...all.map(p => p[1])), y1 = Math.max(...all.map(p => p[1]));
    if (spec.yFormat === 'percent') { y0 = Math.floor(y0 * 10) / 10; y1 = Math.min(1, Math.ceil(y1 * 10 + 1e-9) / 10); }
    if (spec.yZero !== false && spec.yFormat !== 'percent') y0 = Math.min(0, y0);
    if (x1 <= x0) { x0 -= 0.5; x1 += 0.5; }
    if (y1 <= y0) { y1 = y0 + (y0 === 0 ? 1 : Math.abs(y0) * 0.1); }
    const yu = axisUnit(spec.yFormat, Math.max(Math.abs(y0), Math.abs(y1)));
    if (spec.yFormat !== 'percent') {  // the axis ends on a labelled tick
      const step = tickStep(y0 / yu.div, y1 / yu.div, 5) * yu.div;
      y1 = Math.ceil(y1 / step - 1e-9) * step;
    }
    const px = x => L + ((fx(x) - x0) / (x1 - x0)) * (W - L - R);
    const py = y => T + ((y1 - y) / (y1 - y0)) * (H - T - B);
    for (const y of ticks(y0 / yu.div, y1 / yu.div, 5).map(t => t * yu.div)) {
      svg.appendChild(node('line', {x1: L, x2: W - R, y1: py(y), y2: py(y), class: 'grid'}));
      svg.appendChild(node('text', {x: L - 6, y: py(y) + 4, 'text-anchor': 'end', class: 'tick'},
                           tickLabel(y, spec.yFormat, yu)));
    }
    let xt, xLabelOf;
    if (spec.logX && spec.xFormat === 'bytes') {
      // Powers of two (1 KiB, 32 KiB, 1 MiB), each labelled in its own unit.
      const l0 = x0 / Math.LOG10E / Math.LN2, l1 = x1 / Math.LOG10E / Math.LN2;
      const step = Math.max(1, Math.round(tickStep(l0, l1, 4)));
      xt = [];
      for (let k = Math.ceil(l0 / step - 1e-9) * step; k <= l1 + 1e-9; k += step) xt.push(Math.pow(2, k));
      xLabelOf = x => formatBytes(x).replace('.0 ', ' ');
      if (xt.length < 3) {  // a narrow range (1.7 to 3.3 MiB): round numbers of one unit instead
        const lo = Math.pow(10, x0), hi = Math.pow(10, x1), xu = axisUnit('bytes', hi);
        xt = ticks(lo / xu.div, hi / xu.div, 4).map(t => t * xu.div).filter(t => t > 0);
        xLabelOf = x => tickLabel(x, 'bytes', xu);
      }
    } else if (spec.logX) {
      xt = ticks(x0, x1, 4).map(v => Math.pow(10, v));
      xLabelOf = x => formatValue(x, spec.xFormat);
    } else {
      const xu = axisUnit(spec.xFormat, Math.max(Math.abs(x0), Math.abs(x1)));
      xt = ticks(x0 / xu.div, x1 / xu.div, 6, spec.integerX && xu.div === 1).map(t => t * xu.div);
      xLabelOf = x => tickLabel(x, spec.xFormat, xu);
    }
    for (const x of xt) {
      svg.appendChild(node('text', {x: px(x), y: H - B + 16, 'text-anchor': 'middle', class: 'tick'},
                           xLabelOf(x)));
    }
    svg.appendChild(node('path', {d: `M${L},${T}V${H - B}H${W - R}`, class: 'axis', fill: 'none'}));
    svg.appendChild(node('text', {x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'label'},
                         spec.xLabel || ''));
    if (spec.yLabel)
      svg.appendChild(node('text', {x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle', class: 'label',
                                    transform: `rotate(-90 14 ${(T + H - B) / 2})`}, spec.yLabel));
    series.forEach((s, i) => {
      if (s.points.length === 0) return;
      const g = node('g', {class: 'series', 'data-series': s.name});
      g.appendChild(node('polyline', {fill: 'none', stroke: s.color, 'stroke-width': 2,
                                      points: s.points.map(p => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join(' ')}));
      for (const p of s.points) {
        const c = node('circle', {cx: px(p[0]).toFixed(1), cy: py(p[1]).toFixed(1), r: 2.8,
                                  fill: s.color, class: 'point'});
        c.appendChild(node('title', {}, `${s.name}: ${formatValue(p[0], spec.xFormat)}, ${formatValue(p[1], spec.yFormat)}`));
        g.appendChild(c);
      }
      svg.appendChild(g);
      if (series.length > 1) {
        const lx = L + 10 + i * 110;
        svg.appendChild(node('rect', {x: lx, y: 28, width: 10, height: 10, fill: s.color}));
        svg.appendChild(node('text', {x: lx + 14, y: 37, class: 'legend'}, s.name));
      }
    });
    return svg;
  }

  global.TributaryCharts = {lineChart, formatValue, formatBytes, formatDuration};
})(typeof window !== 'undefined' ? window : globalThis);
