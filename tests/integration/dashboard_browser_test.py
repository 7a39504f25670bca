#!/usr/bin/python3
"""The live dashboard and the simulator's report in a real browser: headless Chromium (Debian's
chromium and chromium-driver, driven through Selenium, Debian's python3-selenium).

Dashboard: a real tributary-coordinator with monitor.listen and a token and two real
tributary-client processes over mutual TLS. The page is opened before the clients connect, so the
test sees the run move while the page stays loaded (no reload: a marker set on the window survives):
the round number advances, the clients table gets a row per client, and the round-duration and
accuracy charts get a point per closed round. Without the token the dashboard answers 401. Then
tributary-sim's report.html, opened from the file system: one point per evaluated round, a loss
chart, the summary first in units a person reads (and the same as the page's own formatting,
charts.js's formatBytes and formatDuration, tested with numbers), and only the changed keys
shown.

Screenshots go to the test's directory, and also to $TRIBUTARY_SCREENSHOT_DIR when it is set (that
is how docs/images/ gets them).
"""
import json
import os
import shutil
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
except ImportError:  # reported by the skip below
    webdriver = None

SIM = os.environ.get("TRIBUTARY_SIM_BIN")
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
ROUNDS = 8
CLIENTS = 2
TOKEN = "dashboard-token-5678"


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1100", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT, SIM]), "run through ctest, which names the binaries")
class DashboardBrowserTest(ProcessTest):
    prefix = "trib_dash_"

    def setUp(self):
        # scripts/setup-deps installs the browser: its absence is a failure, not a skip.
        self.assertTrue(webdriver and CHROMIUM and CHROMEDRIVER,
                        "needs chromium, chromium-driver and python3-selenium (scripts/setup-deps)")
        super().setUp()
        self.driver = browser()

    def tearDown(self):
        self.driver.quit()
        super().tearDown()

    def screenshot(self, name):
        path = self.path(name)
        self.assertTrue(self.driver.save_screenshot(path))
        self.assertGreater(os.path.getsize(path), 10_000, "a screenshot of a drawn page")
        out = os.environ.get("TRIBUTARY_SCREENSHOT_DIR")
        if out:
            os.makedirs(out, exist_ok=True)
            shutil.copy(path, os.path.join(out, name))
        return path

    def text(self, element_id):
        return self.driver.find_element(By.ID, element_id).text

    # The page redraws its charts and table (at every change, and every 5 s), so they are read in
    # one script each: a script runs between two redraws, never during one.
    def points(self, chart):
        """The points drawn on a chart (-1 without the chart); checked against its data-points."""
        circles, declared = self.driver.execute_script(
            "const svg = document.querySelector(arguments[0]);"
            "return svg ? [svg.querySelectorAll('circle.point').length,"
            "              Number(svg.getAttribute('data-points'))] : [-1, -1];",
            f'svg[data-chart="{chart}"]')
        self.assertEqual(circles, declared)
        return circles

    def client_rows(self):
        """[[id, state, last seen, accepted, refused, last refusal]] of the clients table now."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#clients tbody tr')].map(r =>"
            "  [r.dataset.client, ...[...r.cells].slice(1).map(c => c.textContent)]);")

    def wait_for(self, what, fn, timeout=240):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = fn()
            if value:
                return value
            time.sleep(0.1)
        self.fail(f"timed out waiting for {what}; coordinator log:\n{self.log('coordinator')}")

    def test_dashboard_follows_a_live_run(self):
        coord, addr, port, events = self.start_monitored_cnn_run(ROUNDS, CLIENTS, TOKEN)
        base = f"http://127.0.0.1:{port}/"
        # Without the token: 401, for the page and for its data.
        for path in ("", "api/state", "api/events", f"?access_token={TOKEN}x"):
            with self.assertRaises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(base + path, timeout=10)
            self.assertEqual(refused.exception.code, 401, path)
        self.driver.get(base)
        self.assertIn("401", self.driver.page_source)
        self.assertEqual(self.driver.find_elements(By.ID, "clients"), [])

        # With it: the page, live before any client has joined.
        self.driver.get(f"{base}?access_token={TOKEN}")
        self.wait_for("the stream to connect", lambda: self.text("connection") == "live")
        self.assertEqual(self.text("rounds-done"), "0")
        self.assertEqual(self.text("rounds-total"), str(ROUNDS))
        self.driver.execute_script("window.__notReloaded = 42;")

        # One client first: the round waits for both, and the table shows it joined meanwhile
        # (the monitor samples the clients every 2 s between the run's events).
        clients = self.start_cnn_clients(addr, CLIENTS, only=[0])
        self.wait_for("the first client in the table",
                      lambda: [r[:2] for r in self.client_rows()] == [["edge-0", "idle"]],
                      timeout=60)
        self.assertEqual(self.text("clients-connected"), "1")
        self.assertEqual(self.text("rounds-done"), "0")
        clients += self.start_cnn_clients(addr, CLIENTS, only=range(1, CLIENTS))

        # Mid-run: a new round arrives through the live update.
        done = int(self.wait_for("round 2 to close",
                                 lambda: int(self.text("rounds-done")) >= 2 and self.text("rounds-done")))
        self.assertLess(done, ROUNDS, "the run must still be going when the page is checked")
        self.assertEqual(self.driver.execute_script("return window.__notReloaded;"), 42)
        self.wait_for("the clients table", lambda: len(self.client_rows()) == CLIENTS)
        self.screenshot("dashboard.png")
        self.assertEqual(sorted(r[0] for r in self.client_rows()),
                         [f"edge-{i}" for i in range(CLIENTS)])

        # The end: every round, a point per round on the charts, each client's updates counted.
        self.wait_for("the run to finish", lambda: self.text("state") == "finished")
        self.assertEqual(coord.wait(timeout=120), 0, self.log("coordinator"))
        for i, c in enumerate(clients):
            self.assertEqual(c.wait(timeout=60), 0, self.log(f"edge-{i}"))
        self.assertEqual(self.text("rounds-done"), str(ROUNDS))
        self.assertEqual(self.text("round"), str(ROUNDS))
        self.assertEqual(self.points("duration"), ROUNDS)
        self.assertEqual(self.points("accuracy"), ROUNDS)  # server-side evaluation every round
        self.assertEqual(self.points("bytes"), 2 * ROUNDS)  # up and down
        with open(events) as f:
            lines = [json.loads(l) for l in f]
        accepted = {}
        for e in lines:
            if e["event"] == "update_accepted":
                accepted[e["client"]] = accepted.get(e["client"], 0) + 1
        rows = self.client_rows()
        self.assertEqual(len(rows), CLIENTS)
        for row in rows:
            self.assertEqual(int(row[3]), accepted[row[0]], row)
        self.assertEqual(self.driver.execute_script("return window.__notReloaded;"), 42)
        self.screenshot("dashboard-finished.png")
        print(f"dashboard: round {done} seen live, {ROUNDS} rounds at the end", file=sys.stderr)

    def test_report_html_draws_its_charts(self):
        report = self.path("report")
        subprocess.run([SIM, "--set", "data.dataset=synthetic", "--set", "data.num_clients=8",
                        "--set", "data.train_examples=800", "--set", "data.test_examples=200",
                        "--set", "run.model=mlp", "--set", "run.rounds=5",
                        "--set", "run.clients_per_round=4", "--set", "eval.every=2",
                        "--set", "fit.epochs=1", "--set", "sim.target_accuracy=0.5",
                        "--set", f"sim.report_dir={report}"],
                       check=True, capture_output=True, timeout=300)
        with open(os.path.join(report, "report.json")) as f:
            doc = json.load(f)
        rounds, totals = doc["rounds"], doc["totals"]
        evaluated = [r for r in rounds if "test_accuracy" in r]
        trained = [r for r in rounds if r["train_loss"] > 0]
        self.assertEqual(len(rounds), 5)
        self.assertEqual([r["round"] for r in evaluated], [2, 4])  # eval.every = 2
        self.assertEqual([r["accepted"] for r in rounds], [4] * 5)
        self.assertNotIn("completed", rounds[0])
        self.driver.get("file://" + os.path.join(report, "report.html"))
        self.assertEqual(self.points("accuracy"), len(evaluated))
        self.assertEqual(self.points("upload"), len(evaluated))
        self.assertEqual(self.points("duration"), len(rounds))
        self.assertGreater(len(trained), 0, "the native trainer reports a training loss")
        self.assertEqual(self.points("loss"), len(trained) + len(evaluated))  # training and test
        # The accuracy chart's points carry the report's numbers (in the tooltips).
        titles = self.driver.execute_script(
            "return [...document.querySelectorAll('svg[data-chart=\"accuracy\"] circle.point title')]"
            ".map(t => t.textContent);")
        self.assertEqual(len(titles), len(evaluated))
        last = evaluated[-1]["test_accuracy"]
        self.assertIn(f"{100 * last:.0f}%", titles[-1])

        # The page's own formatting (charts.js), with numbers: the rules of core/human_units.h.
        fmt = self.driver.execute_script(
            "const C = TributaryCharts; return ["
            "C.formatBytes(780), C.formatBytes(1536), C.formatBytes(1048575),"
            "C.formatBytes(796957000), C.formatDuration(0.002056135999964681),"
            "C.formatDuration(0.25), C.formatDuration(2.3), C.formatDuration(150)];")
        self.assertEqual(fmt, ["780 B", "1.5 KiB", "1.0 MiB", "760.0 MiB", "2.1 ms", "250 ms",
                               "2.30 s", "2.5 min"])

        # The summary leads, in units a person reads, and agrees with report.json.
        summary = self.driver.execute_script(
            "return Object.fromEntries([...document.querySelectorAll('#summary [data-summary]')]"
            ".map(d => [d.dataset.summary, d.querySelector('b').textContent]));")
        self.assertEqual(summary["final_accuracy"], f"{100 * totals['final_test_accuracy']:.2f}%")
        best = max(evaluated, key=lambda r: r["test_accuracy"])
        self.assertEqual(summary["best_accuracy"], f"{100 * best['test_accuracy']:.2f}%")
        self.assertEqual(totals["best_test_round"], best["round"])
        self.assertEqual(summary["target"], f"round {totals['target_round']}"
                         if totals["target_round"] else "not reached")
        self.assertEqual(summary["final_loss"], f"{totals['final_test_loss']:.4g}")
        self.assertEqual(summary["rounds"], "5 of 5")
        for key in ("bytes_up", "bytes_down"):  # the C++ and the JS helpers agree
            self.assertEqual(summary[key], self.driver.execute_script(
                "return TributaryCharts.formatBytes(arguments[0]);", totals[key]))
            self.assertRegex(summary[key], r"^\d+(\.\d)? (B|KiB|MiB|GiB)$")
        self.assertEqual(summary["wall_time"], self.driver.execute_script(
            "return TributaryCharts.formatDuration(arguments[0]);", totals["wall_seconds"]))
        first_chart = self.driver.execute_script(
            "const s = document.getElementById('summary'), c = document.getElementById('chart-round');"
            "return s.getBoundingClientRect().top < c.getBoundingClientRect().top;")
        self.assertTrue(first_chart, "the summary is above the charts")
        # The upload axis is labelled in binary units.
        ticks = self.driver.execute_script(
            "return [...document.querySelectorAll('svg[data-chart=\"upload\"] text.tick')]"
            ".map(t => t.textContent);")
        self.assertTrue(any(t.endswith("iB") or t.endswith(" B") for t in ticks), ticks)
        self.assertFalse(any(t.endswith("kB") or t.endswith("MB") for t in ticks), ticks)

        # The configuration: the keys this run set, visible; every key only on demand.
        changed = self.driver.execute_script(
            "return [...document.querySelectorAll('#config-changed tr')].slice(1)"
            ".map(r => r.cells[0].textContent);")
        self.assertEqual(sorted(changed), sorted([
            "data.dataset", "data.num_clients", "data.train_examples", "data.test_examples",
            "run.rounds", "run.clients_per_round", "eval.every",
            "sim.target_accuracy", "sim.report_dir"]))
        self.screenshot("report.png")
        details = self.driver.find_element(By.ID, "config-all")
        self.assertIsNone(details.get_attribute("open"))
        visible = ("const th = [...document.querySelectorAll('#config-all th')]"
                   "  .find(t => t.textContent === 'attack.kind');"
                   "return th.checkVisibility();")
        self.assertFalse(self.driver.execute_script(visible), "a default key is hidden at first")
        details.find_element(By.TAG_NAME, "summary").click()
        self.assertEqual(details.get_attribute("open"), "true")
        self.assertTrue(self.driver.execute_script(visible), "and shown on demand")
        self.assertEqual(len(details.find_elements(By.TAG_NAME, "tr")), len(doc["config"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
