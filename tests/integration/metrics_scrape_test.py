#!/usr/bin/python3
"""Prometheus metrics of a live run: a real tributary-coordinator with monitor.listen and a token,
two real tributary-client processes over mutual TLS, and a scraper that reads /metrics while the
run goes and parses every scrape with Prometheus' own exposition-format parser
(prometheus_client.parser, Debian's python3-prometheus-client). The values must follow the run
(rounds, accepted updates, bytes, client gauges) and a scrape without the token must get 401.
"""
import json
import os
import sys
import time
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

ROUNDS = 4
CLIENTS = 2
LINGER = 5
TOKEN = "monitor-token-1234"


def scrape(url, token=TOKEN):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value} over every family the parser finds."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class MetricsScrapeTest(ProcessTest):
    prefix = "trib_metrics_"

    def test_metrics_follow_a_live_run(self):
        # The monitor serves the finished run's state for LINGER s after it ends
        # (monitor.linger_s): without it, the window was about 40 ms and a scraper on a loaded
        # machine could miss it.
        coord, addr, port, events = self.start_monitored_cnn_run(ROUNDS, CLIENTS, TOKEN,
                                                                 linger_s=LINGER)
        url = f"http://127.0.0.1:{port}/metrics"
        # Without the token: 401, and the body reveals nothing.
        with self.assertRaises(urllib.error.HTTPError) as refused:
            scrape(url, token=None)
        self.assertEqual(refused.exception.code, 401)
        self.assertEqual(refused.exception.headers.get("WWW-Authenticate"), 'Bearer realm="tributary"')

        status, ctype, text = scrape(url)
        self.assertEqual(status, 200)
        self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8")
        first = samples(text)
        self.assertEqual(first[("tributary_run_rounds", frozenset())], ROUNDS)
        self.assertEqual(first[("tributary_rounds_closed_total", frozenset())], 0)

        clients = self.start_cnn_clients(addr, CLIENTS)

        # Scrape while the run goes: every scrape parses, and the counters never go back.
        seen_rounds, last_closed, live_connected = set(), 0, 0
        final = None  # the scrape that saw the run finish
        deadline = time.time() + 300
        while coord.poll() is None and time.time() < deadline:
            try:
                _, _, text = scrape(url)
            except (urllib.error.URLError, ConnectionError):
                break  # the coordinator is finishing
            s = samples(text)
            closed = s[("tributary_rounds_closed_total", frozenset())]
            self.assertGreaterEqual(closed, last_closed)
            last_closed = closed
            seen_rounds.add(s[("tributary_round", frozenset())])
            live_connected = max(live_connected,
                                 s[("tributary_clients", frozenset({("state", "connected")}))])
            if s[("tributary_run_finished", frozenset())] == 1:
                final = s
                finished_at = time.time()
                break
            time.sleep(0.05)
        self.assertIsNotNone(final, "no scrape saw the run finish")
        # It goes on serving the same final state until the linger ends, then exits with the
        # run's status.
        time.sleep(1.0)
        self.assertEqual(coord.poll(), None, "the coordinator exited before monitor.linger_s")
        _, _, text = scrape(url)
        self.assertEqual(samples(text)[("tributary_run_finished", frozenset())], 1)
        self.assertEqual(coord.wait(timeout=120), 0, self.log("coordinator"))
        self.assertGreater(time.time() - finished_at, 1.0)
        self.assertIn(f"monitor: serving the run's final state on 127.0.0.1:{port} for {LINGER} s",
                      self.log("coordinator"))
        for i, c in enumerate(clients):
            self.assertEqual(c.wait(timeout=60), 0, self.log(f"edge-{i}"))
        self.assertEqual(live_connected, CLIENTS)
        self.assertGreaterEqual(len(seen_rounds - {0}), 2, f"rounds seen live: {seen_rounds}")

        # The last scrape against the run's own event log.
        with open(events) as f:
            lines = [json.loads(l) for l in f]
        closed = [e for e in lines if e["event"] == "round_closed"]
        evaluated = [e for e in lines if e["event"] == "evaluated"]
        self.assertEqual(final[("tributary_rounds_closed_total", frozenset())], ROUNDS)
        self.assertEqual(final[("tributary_run_ok", frozenset())], 1)
        self.assertEqual(final[("tributary_updates_accepted_total", frozenset())],
                         sum(e["accepted"] for e in closed))
        self.assertEqual(final[("tributary_transfer_bytes_total",
                                frozenset({("direction", "up"), ("codec", "dense")}))],
                         sum(e["bytes_up"] for e in closed))
        self.assertEqual(final[("tributary_round_duration_seconds_count", frozenset())], ROUNDS)
        self.assertAlmostEqual(final[("tributary_evaluation_accuracy",
                                      frozenset({("source", "server")}))],
                               evaluated[-1]["accuracy"], places=9)
        print(f"metrics: {len(final)} samples; rounds seen live {sorted(seen_rounds)}; "
              f"{int(last_closed)} rounds closed", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
