// tributary-sim's report.html: draws the report's charts (charts.js) from the rounds embedded in the
// page as JSON (<script type="application/json" id="report-data">, written by sim/report.cc):
// test accuracy by round, training and test loss by round (as the dashboard's loss chart), test
// accuracy against cumulative upload bytes, for private runs against epsilon, and round durations.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const evaluated = data.rounds.filter(r => typeof r.test_accuracy === 'number');
  const C = TributaryCharts;
  C.lineChart(document.getElementById('chart-round'), {id: 'accuracy', title: 'Test accuracy by round', xLabel: 'round',
    yFormat: 'percent', integerX: true, empty: 'no evaluated rounds',
    series: [{name: 'test accuracy', points: evaluated.map(r => [r.round, r.test_accuracy])}]});
  C.lineChart(document.getElementById('chart-loss'), {id: 'loss', title: 'Loss by round', xLabel: 'round',
    integerX: true, empty: 'no loss reported',
    series: [{name: 'training', color: '#ff7f0e', points: data.rounds.filter(r => typeof r.train_loss === 'number')
                                                                .map(r => [r.round, r.train_loss])},
             {name: 'test', color: '#1f77b4', points: evaluated.map(r => [r.round, r.test_loss])}]});
  C.lineChart(document.getElementById('chart-upload'), {id: 'upload', title: 'Test accuracy by cumulative upload',
    xLabel: 'upload bytes (log scale)', xFormat: 'bytes', yFormat: 'percent', logX: true, empty: 'no evaluated rounds',
    series: [{name: 'test accuracy', points: evaluated.map(r => [r.cum_bytes_up, r.test_accuracy])}]});
  if (data.dp) {
    C.lineChart(document.getElementById('chart-epsilon'), {id: 'epsilon', title: 'Test accuracy against privacy spent',
      xLabel: 'epsilon', yFormat: 'percent', empty: 'no evaluated rounds',
      series: [{name: 'test accuracy', points: evaluated.filter(r => typeof r.epsilon === 'number')
                                                  .map(r => [r.epsilon, r.test_accuracy])}]});
  }
  C.lineChart(document.getElementById('chart-duration'), {id: 'duration', title: 'Round duration (wall)', xLabel: 'round',
    yFormat: 'seconds', integerX: true,
    series: [{name: 'wall seconds', color: '#8c564b', points: data.rounds.map(r => [r.round, r.wall_seconds])}]});
})();
