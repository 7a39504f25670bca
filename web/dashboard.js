// The coordinator's live dashboard (served by monitor/, see docs/operations.md). It reads the run
// from the server-sent events at api/events: a snapshot first, then deltas whose rows replace the
// rows with the same key ("round" or "id"); deltas older than the snapshot are ignored, so a
// reconnect (EventSource retries by itself) starts again from a fresh snapshot. The token, when
// the coordinator has one, comes from this page's own address (?access_token=...) and is passed
// on to api/events. Charts come from charts.js; nothing is loaded from the network.
(function () {
  'use strict';
  const state = {seq: -1, run: {}, rounds: new Map(), clients: new Map()};
  const $ = id => document.getElementById(id);
  const token = new URLSearchParams(location.search).get('access_token');
  const query = token ? '?access_token=' + encodeURIComponent(token) : '';
  let pending = false;

  function apply(msg) {
    if (msg.kind === 'snapshot') {
      state.seq = msg.seq;
      state.run = msg.run || {};
      state.rounds = new Map((msg.rounds || []).map(r => [r.round, r]));
      state.clients = new Map((msg.clients || []).map(c => [c.id, c]));
    } else {
      if (msg.seq <= state.seq) return;
      state.seq = msg.seq;
      if (msg.run) state.run = msg.run;
      for (const r of msg.rounds || []) state.rounds.set(r.round, Object.assign(state.rounds.get(r.round) || {}, r));
      for (const c of msg.clients || []) state.clients.set(c.id, c);
    }
    if (!pending) { pending = true; requestAnimationFrame(render); }
  }

  function ago(t) {
    if (!t) return '-';
    const s = Math.max(0, Date.now() / 1000 - t);
    return s < 90 ? s.toFixed(0) + ' s ago' : s < 5400 ? (s / 60).toFixed(0) + ' min ago' : (s / 3600).toFixed(1) + ' h ago';
  }

  function cell(row, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
  }

  function render() {
    pending = false;
    const run = state.run;
    $('model').textContent = run.model || '';
    $('subtitle').textContent = [run.strategy && 'strategy ' + run.strategy, run.codec && 'codec ' + run.codec,
                                 run.parameters && run.parameters + ' parameters',
                                 run.resumed_from && 'resumed from ' + run.resumed_from].filter(Boolean).join(' · ');
    // An asynchronous run's rounds are steps (a buffer of updates applied).
    const unit = run.mode === 'async' ? 'step' : 'round';
    for (const el of document.querySelectorAll('.unit')) el.textContent = unit;
    $('round').textContent = run.round ?? 0;
    $('rounds-total').textContent = run.rounds_total ?? '?';
    $('rounds-done').textContent = run.rounds_done ?? 0;
    $('state').textContent = run.state || 'starting';
    $('state').className = 'state-' + (run.state || '');
    $('received').textContent = run.round_open ? `${run.received || 0} of ${run.selected || 0}` : '-';
    $('clients-connected').textContent = run.clients_connected ?? 0;
    $('clients-idle').textContent = run.clients_idle ?? 0;
    $('clients-cooling').textContent = run.clients_cooling ?? 0;
    if (run.epsilon !== undefined && run.epsilon !== null) {
      $('epsilon-box').hidden = false;
      $('epsilon').textContent = run.epsilon.toFixed(3);
    }
    const rounds = [...state.rounds.values()].sort((a, b) => a.round - b.round);
    // Split learning: the latest round's bytes per batch (both ways) and server-part compute.
    const split = rounds.filter(r => typeof r.split_bytes_per_batch === 'number').pop();
    if (split) {
      $('split-box').hidden = false;
      $('split-batch-bytes').textContent = (split.split_bytes_per_batch / 1024).toFixed(1) + ' KiB';
      $('split-server').textContent = split.split_server_seconds.toFixed(2) + ' s';
    }
    const pts = key => rounds.filter(r => typeof r[key] === 'number').map(r => [r.round, r[key]]);
    const C = TributaryCharts;
    C.lineChart($('chart-accuracy'), {id: 'accuracy', title: `Accuracy by ${unit}`, xLabel: unit, yFormat: 'percent', integerX: true,
      empty: `no evaluated ${unit} yet`,
      series: [{name: 'server', color: '#1f77b4', points: pts('accuracy')},
               {name: 'federated', color: '#9467bd', points: pts('federated_accuracy')}]});
    C.lineChart($('chart-loss'), {id: 'loss', title: `Loss by ${unit}`, xLabel: unit, integerX: true,
      series: [{name: 'training', color: '#ff7f0e', points: pts('train_loss')},
               {name: 'server', color: '#1f77b4', points: pts('loss')},
               {name: 'federated', color: '#9467bd', points: pts('federated_loss')}]});
    C.lineChart($('chart-bytes'), {id: 'bytes', title: `Bytes per ${unit}`, xLabel: unit, yFormat: 'bytes', integerX: true,
      series: [{name: 'up', color: '#2ca02c', points: pts('bytes_up')},
               {name: 'down', color: '#d62728', points: pts('bytes_down')}]});
    C.lineChart($('chart-duration'), {id: 'duration', title: unit === 'step' ? 'Step duration' : 'Round duration', xLabel: unit, yFormat: 'seconds', integerX: true,
      series: [{name: 'duration', color: '#8c564b', points: pts('duration_seconds')}]});
    const body = $('clients').tBodies[0];
    const rows = [...state.clients.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    body.replaceChildren(...rows.map(c => {
      const tr = document.createElement('tr');
      tr.dataset.client = c.id;
      cell(tr, c.id);
      cell(tr, c.state, 'state-' + c.state);
      cell(tr, ago(c.last_seen));
      cell(tr, String(c.accepted), 'num');
      cell(tr, String(c.refused), 'num');
      cell(tr, c.last_refusal || '');
      cell(tr, c.cooling_until ? 'round ' + c.cooling_until : '');  // a cool-down after a miss
      return tr;
    }));
    $('untracked').hidden = !run.clients_untracked;
    $('untracked').textContent = `${run.clients_untracked} more clients are not listed`;
  }

  function connect() {
    const source = new EventSource('api/events' + query);
    source.onopen = () => { $('connection').textContent = 'live'; $('connection').className = 'live'; };
    source.onmessage = e => apply(JSON.parse(e.data));
    source.onerror = () => {
      // After the run's end the coordinator exits: stop retrying and say so.
      const ended = state.run.state === 'finished' || state.run.state === 'failed';
      if (ended) source.close();
      $('connection').textContent = ended ? 'run ended' : 'reconnecting';
      $('connection').className = ended ? '' : 'lost';
    };
  }
  connect();
  setInterval(() => { if (!pending) { pending = true; requestAnimationFrame(render); } }, 5000);
})();
