#!/usr/bin/python3
"""The monitor port under hostile load (issue #28, item 5): a real tributary-coordinator with
monitor.listen = "127.0.0.1:0" and a token, and peers of its monitor port that misbehave, from
addresses of their own in 127.0.0.0/8 (the scraper and the good viewer are 127.0.0.1):

- the ready file names the monitor's bound port (line 2, "monitor=host:port"), which serves
  /metrics; before, the port appeared nowhere;
- 32 connections that never send a request: from one address, the cap per address closes 24 at
  once and every scrape of /metrics and /api/state succeeds at once; spread over four addresses
  (every place taken), every scrape succeeds within the first-byte deadline. Before, 2 of 36
  scrapes succeeded;
- a dashboard viewer that never reads is dropped (a security warning naming its address) while
  the run goes on, and a viewer that reads sees the whole run. Before, it kept its stream.
"""
import select
import socket
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

TOKEN = "monitor-token-5678"
ROUNDS = 150
STALL_S = 1.0  # monitor.stream_stall_timeout_s
FIRST_BYTE_S = 2.0  # monitor.first_byte_timeout_s (the default)
DATA = ["data.dataset=synthetic", "data.train_examples=1000", "data.test_examples=100"]


def connect_from(source, port, receive_buffer=0):
    s = socket.socket()
    if receive_buffer:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def closed_at_once(socks, wait=0.3):
    """How many of `socks` the server closed within `wait` seconds (it sent them nothing), all
    watched at once (the held ones reach their first-byte deadline only later)."""
    closed = set()
    until = time.time() + wait
    while time.time() < until and len(closed) < len(socks):
        readable, _, _ = select.select([s for s in socks if s not in closed], [], [],
                                       max(0.0, until - time.time()))
        for s in readable:
            try:
                if s.recv(1) == b"":
                    closed.add(s)
            except ConnectionError:
                closed.add(s)
    return len(closed)


def scrape(port, path, timeout=5):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read().decode()


def scrapes(port, n, retry_for):
    """n scrapes, alternately /metrics and /api/state, each retried for up to `retry_for` s when
    the connection is refused; returns (successes, first attempt successes, seconds, slowest)."""
    ok = first_try = 0
    slowest = 0.0
    t0 = time.time()
    for i in range(n):
        path = "/metrics" if i % 2 == 0 else "/api/state"
        start = time.time()
        attempts = 0
        while True:
            attempts += 1
            try:
                status, body = scrape(port, path)
                if status == 200 and ("tributary_run_rounds" in body or '"kind"' in body):
                    ok += 1
                    first_try += attempts == 1
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.time() - start > retry_for:
                    break
                time.sleep(0.02)
        slowest = max(slowest, time.time() - start)
    return ok, first_try, time.time() - t0, slowest


class GoodViewer(threading.Thread):
    """Reads /api/events until the server closes it."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = connect_from("127.0.0.1", port)
        self.sock.sendall(f"GET /api/events?access_token={TOKEN} HTTP/1.1\r\n"
                          "Host: 127.0.0.1\r\n\r\n".encode())
        self.received = bytearray()
        self.lock = threading.Lock()

    def run(self):
        while True:
            try:
                b = self.sock.recv(65536)
            except OSError:
                break
            if not b:
                break
            with self.lock:
                self.received += b

    def bytes(self):
        with self.lock:
            return len(self.received)

    def text(self):
        with self.lock:
            return self.received.decode(errors="replace")


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class MonitorHostileTest(ProcessTest):
    prefix = "trib_monitor_hostile_"

    def test_the_monitor_under_hostile_load(self):
        coord, addr = self.start_coordinator(f"""[run]
model = "mlp"
rounds = {ROUNDS}
clients_per_round = 2
min_available = 2
round_timeout_s = 30
[fit]
epochs = 1
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 100
[monitor]
listen = "127.0.0.1:0"
token = "{TOKEN}"
stream_stall_timeout_s = {STALL_S}
""")
        # The ready file: the clients' address first, as before; the monitor's bound port after.
        with open(self.path("coordinator.ready")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], addr)
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(lines[1].startswith("monitor=127.0.0.1:"), lines)
        port = int(lines[1].rsplit(":", 1)[1])
        self.assertNotEqual(port, 0)
        status, body = scrape(port, "/metrics")
        self.assertEqual(status, 200)
        self.assertIn(f"tributary_run_rounds {ROUNDS}", body)
        self.assertIn(f"dashboard at http://127.0.0.1:{port}/", self.log("coordinator"))
        print(f"ready file: {lines}; /metrics answers on port {port}", file=sys.stderr)

        # 32 connections that never send a request, from one address: 8 (the cap per address)
        # are held until the first-byte deadline, 24 closed at once; scrapes are not held up.
        idle = [connect_from("127.0.0.2", port) for _ in range(32)]
        # 1 s: time for a loaded machine to close the 24, and 1 s before the 8 held ones reach
        # their 2 s first-byte deadline.
        refused = closed_at_once(idle, wait=1.0)
        ok, first_try, took, slowest = scrapes(port, 36, retry_for=5)
        print(f"32 idle connections from 127.0.0.2: {refused} closed at once; {ok} of 36 scrapes "
              f"succeeded ({first_try} at the first try) in {took:.2f} s, the slowest "
              f"{slowest:.3f} s", file=sys.stderr)
        self.assertEqual(refused, 24)
        self.assertEqual(ok, 36)
        self.assertEqual(first_try, 36)
        self.assertLess(slowest, 1.0)
        for s in idle:
            s.close()

        # 32 from four addresses, 8 each: every place is taken until the first-byte deadline.
        t0 = time.time()
        idle = [connect_from(f"127.0.0.{3 + i // 8}", port) for i in range(32)]
        ok, first_try, took, slowest = scrapes(port, 36, retry_for=FIRST_BYTE_S + 3)
        since = time.time() - t0
        print(f"32 idle connections from 127.0.0.3-6: {ok} of 36 scrapes succeeded in "
              f"{took:.2f} s ({since:.2f} s after they connected), the slowest {slowest:.3f} s "
              f"(first-byte deadline {FIRST_BYTE_S} s)", file=sys.stderr)
        self.assertEqual(ok, 36)
        self.assertLess(since, FIRST_BYTE_S + 2)
        for s in idle:
            s.close()
        log = self.log("coordinator")
        self.assertIn("too many monitor connections from one address from 127.0.0.2", log)
        self.assertIn("monitor connection sent no request in time from 127.0.0.", log)

        # A viewer that never reads (a small receive window, so that little waits in its kernel)
        # and one that reads, then the run.
        stuck = connect_from("127.0.0.7", port, receive_buffer=4096)
        stuck.sendall(f"GET /api/events?access_token={TOKEN} HTTP/1.1\r\n"
                      "Host: 127.0.0.1\r\n\r\n".encode())
        viewer = GoodViewer(port)
        viewer.start()
        connected = time.time()
        clients = self.start_mlp_clients(addr, 2, DATA)
        dropped_after = None
        sent_by_then = 0
        while coord.poll() is None and time.time() - connected < 60:
            if "monitor viewer stopped reading from 127.0.0.7" in self.log("coordinator"):
                dropped_after = time.time() - connected
                sent_by_then = viewer.bytes()
                break
            time.sleep(0.05)
        # It was reset while the run goes on: what it did not read is discarded and its next read
        # fails (a reset; an end of stream would do too, a read that waits would not).
        closed_during_run, got, ending = False, 0, "nothing"
        if dropped_after is not None:
            stuck.settimeout(5)
            try:
                while True:
                    b = stuck.recv(65536)
                    if not b:
                        ending = "an end of stream"
                        break
                    got += len(b)
            except ConnectionError:
                ending = "a reset"
            closed_during_run = coord.poll() is None
        self.assertEqual(coord.wait(timeout=60), 0, self.log("coordinator"))
        for i, c in enumerate(clients):
            self.assertEqual(c.wait(timeout=30), 0, self.log(f"edge-{i}"))
        viewer.join(timeout=10)
        log = self.log("coordinator")
        when = "never" if dropped_after is None else f"{dropped_after:.2f} s after it connected"
        print(f"a viewer that never reads was dropped {when} "
              f"(stall timeout {STALL_S} s), the reading viewer having had {sent_by_then} bytes "
              f"by then and {viewer.bytes()} in all; the dropped one then read {got} bytes and "
              f"{ending}", file=sys.stderr)
        self.assertIsNotNone(dropped_after, "the viewer that never reads was not dropped:\n" + log)
        self.assertTrue(closed_during_run, "the run ended before the dropped viewer's stream did")
        # The run went on after the drop, and the viewer that reads saw all of it.
        self.assertIn(f"run complete: {ROUNDS} rounds", log)
        self.assertNotIn("monitor viewer stopped reading from 127.0.0.1", log)
        self.assertIn('"state":"finished"', viewer.text())

if __name__ == "__main__":
    unittest.main(verbosity=2)
