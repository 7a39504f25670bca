#!/usr/bin/python3
"""The aggregation tier between real processes (issue 31, docs/tier.md): a tributary-coordinator,
three tributary-aggregator processes and 15 tributary-client processes, 30 in the long mode
(Tributary's native trainer, the mlp on synthetic data), all over mutual TLS on loopback, each
aggregator with its own certificate (`tributary-certs aggregator`).

The same run with the clients connected to the coordinator itself gives bitwise the same final
model (rounds of all the clients: the exact partial sums of the three groups add up to the sum one
coordinator folds), with the plain dense codec and with top-k + q8 under error feedback (each
client's residual in its state dir). And a client certificate that says AggregatorHello is refused,
naming why, while the run goes on.

Failure (docs/tier.md, failover): each client lists the three aggregators, its own first. An
aggregator SIGKILLed while its clients train round 2 loses its group's share of that round only:
every update the coordinator accepted is in the round (the other groups'), the round closes from
them, and the dead aggregator's clients move to another endpoint (each draws one of the others)
and train every later round through another aggregator. A coordinator SIGKILLed after round 2 and
resumed on the same port (--resume) is rejoined by the aggregators, which announce their clients again, and the run ends
with bitwise the model of the run on one coordinator that nothing interrupted.

The short mode (CI) runs 15 clients, five a group, and leaves out the uninterrupted dense run
through the tier (the resumed run compares dense updates through the tier with one coordinator);
TRIBUTARY_LONG=1 runs 30 clients and that test too. Each client holds 60 examples in both modes.
Alone on 2 cores the short mode took 54 s (2026-12-06; 102 s with 30 clients): each test starts
its clients as processes, most twice.
"""
import json
import os
import re
import signal
import time
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest, free_port

AGGREGATOR = os.environ.get("TRIBUTARY_AGGREGATOR_BIN")
LONG = bool(os.environ.get("TRIBUTARY_LONG"))
# 30 clients in the long mode, 15 in the short one (CI): each client holds 60 examples either way.
CLIENTS = 30 if LONG else 15
GROUPS = 3
ROUNDS = 8  # of the resumed run: the kill lands after round 2, well before its end
DATA = ["data.dataset=synthetic", f"data.train_examples={60 * CLIENTS}", "data.test_examples=100",
        "data.partition=dirichlet:0.5"]


SECAGG = """[secagg]
enabled = true
clip = 0.5
quant_bits = 16
"""


def run_toml(codec, rounds=3, model="mlp", epochs=1, min_completed=CLIENTS, output="",
             secagg=False):
    return f"""{SECAGG if secagg else ""}[run]
model = "{model}"
rounds = {rounds}
clients_per_round = {CLIENTS}
min_available = {CLIENTS}
min_completed = {min_completed}
round_timeout_s = 120
codec = "{codec}"
seed = 7
[fit]
epochs = {epochs}
batch_size = 16
lr = 0.05
momentum = 0.5
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 100
[output]
history = "none"
{output}"""


def read_events(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@unittest.skipUnless(CERTS and COORDINATOR and CLIENT and AGGREGATOR,
                     "run through ctest, which names the binaries")
class TierRunTest(ProcessTest):
    prefix = "trib_tier_"

    def start_aggregator(self, name, coordinator):
        if not os.path.exists(os.path.join(self.pki, "aggregators", name + ".crt")):
            self.certs("aggregator", "--id", name, "--host", "localhost", "--ip", "127.0.0.1")
        ready = self.path(name + ".ready")
        proc = self.start(name, [
            AGGREGATOR, "--coordinator", coordinator, "--listen", "127.0.0.1:0",
            "--ca", f"{self.pki}/ca.crt", "--cert", f"{self.pki}/aggregators/{name}.crt",
            "--key", f"{self.pki}/aggregators/{name}.key", "--heartbeat-s", "1",
            "--reconnect-s", "0.5", "--ready-file", ready])
        for _ in range(300):
            if os.path.exists(ready) or proc.poll() is not None:
                break
            time.sleep(0.1)
        self.assertTrue(os.path.exists(ready), self.log(name))
        with open(ready) as f:
            return proc, f.readline().strip()

    def clients(self, tag, addresses, failover=False, model="mlp"):
        """Client i connects to addresses[i % len(addresses)], with its own state dir; with
        `failover`, it lists them all, that one first (then the ones after it)."""
        procs = []
        for i in range(CLIENTS):
            ca, cert, key = self.client_tls(f"edge-{i}")
            n = len(addresses)
            endpoints = ",".join(addresses[(i + k) % n] for k in range(n if failover else 1))
            procs.append(self.start(f"{tag}-edge-{i}", [
                CLIENT, "--coordinator", endpoints, "--ca", ca,
                "--cert", cert, "--key", key, "--num-clients", str(CLIENTS),
                "--client-index", str(i), "--threads", "1", "--log-level", "warn",
                "--state-dir", self.path(f"{tag}-state-{i}"), "--set", f"run.model={model}",
                *[a for kv in DATA for a in ("--set", kv)]]))
        return procs

    def wait_for(self, what, predicate, timeout=120):
        deadline = time.monotonic() + timeout
        while not predicate():
            self.assertLess(time.monotonic(), deadline, f"timed out waiting for {what}")
            time.sleep(0.02)

    def finish(self, tag, coord, procs, clients_tag=None):
        self.assertEqual(coord.wait(timeout=240), 0, self.log(tag)[-3000:])
        for i, p in enumerate(procs):
            name = f"{clients_tag or tag}-edge-{i}"
            self.assertEqual(p.wait(timeout=60), 0, self.log(name)[-2000:])
        found = re.search(r"final model: .* \(hash ([0-9a-f]{16})\)", self.log(tag))
        self.assertIsNotNone(found, self.log(tag)[-2000:])
        return found.group(1)

    def one_coordinator(self, tag, codec, rounds=3, secagg=False):
        coord, addr = self.start_coordinator(run_toml(codec, rounds=rounds, secagg=secagg),
                                             name=tag)
        return self.finish(tag, coord, self.clients(tag, [addr]))

    def through_tier(self, tag, codec, secagg=False):
        coord, addr = self.start_coordinator(run_toml(codec, secagg=secagg), name=tag)
        aggs = [self.start_aggregator(f"{tag}-agg-{g}", addr) for g in range(GROUPS)]
        model = self.finish(tag, coord, self.clients(tag, [a for _, a in aggs]))
        for g, (proc, _) in enumerate(aggs):
            self.assertEqual(proc.wait(timeout=30), 0, self.log(f"{tag}-agg-{g}")[-2000:])
        log = self.log(tag)
        for g in range(GROUPS):
            self.assertIn(f"aggregator {tag}-agg-{g} connected", log)
            agg_log = self.log(f"{tag}-agg-{g}")
            if secagg:  # one secure sum per round, of the whole group
                sums = re.findall(r"round (\d+): the secure sum of (\d+) survivors sent up", agg_log)
                self.assertEqual(sums, [(str(r), str(CLIENTS // GROUPS)) for r in (1, 2, 3)],
                                 agg_log[-2000:])
                continue
            sent = re.findall(r"round (\d+): (\d+) updates \((\d+) accepted\) sent up", agg_log)
            self.assertEqual(sum(int(a) for _, _, a in sent), 3 * CLIENTS // GROUPS, agg_log[-2000:])
        return model

    def check_codec(self, codec):
        alone = self.one_coordinator("alone", codec)
        tier = self.through_tier("tier", codec)
        print(f"{codec}: one coordinator {alone}, coordinator + {GROUPS} aggregators {tier}")
        self.assertEqual(tier, alone)

    @unittest.skipUnless(LONG, "long mode (TRIBUTARY_LONG=1): the resumed run below compares dense "
                         "updates through the tier with one coordinator")
    def test_dense_updates_give_the_one_coordinator_model(self):
        self.check_codec("dense")

    def test_compressed_updates_with_error_feedback_give_the_one_coordinator_model(self):
        self.check_codec("topk(0.1)+q8")

    def test_secure_aggregation_per_group_gives_the_one_coordinator_model(self):
        # Each client rounds stochastically from its task's fit seed, which the coordinator derives
        # alike for both runs: the three groups' integer sums add up to the one session's sum.
        alone = self.one_coordinator("secure-alone", "dense", secagg=True)
        tier = self.through_tier("secure-tier", "dense", secagg=True)
        print(f"secure aggregation: one coordinator {alone}, coordinator + {GROUPS} aggregators "
              f"{tier}")
        self.assertEqual(tier, alone)

    def test_secure_aggregation_per_group_survives_a_fifth_of_each_group_dropping(self):
        tag = "secure-drop"
        # Two rounds of the cnn, 60 epochs of 60 examples (about 3 s of training a round here;
        # 10 epochs took 0.5 s, too short under a loaded ctest): round 2's clients train long
        # enough to kill a fifth of each group (two of ten, or one of five) after they shared
        # their keys (each aggregator logs its phases).
        coord, addr = self.start_coordinator(
            run_toml("dense", rounds=2, model="cnn", epochs=60, secagg=True), name=tag)
        aggs = [self.start_aggregator(f"{tag}-agg-{g}", addr) for g in range(GROUPS)]
        procs = self.clients(tag, [a for _, a in aggs], model="cnn")
        for g in range(GROUPS):
            self.wait_for(f"round 2's masked inputs at aggregator {g}", lambda: re.search(
                r"round 2: secure aggregation phase 'masked input'", self.log(f"{tag}-agg-{g}")))
        per_group = CLIENTS // GROUPS
        dropped = per_group // 5
        # Client i is in group i % GROUPS: edge-0..5 are two a group, edge-0..2 one.
        victims = [i for i in range(CLIENTS) if i // GROUPS < dropped]
        for i in victims:
            procs[i].send_signal(signal.SIGKILL)
        for i in victims:
            procs[i].wait(timeout=30)
        self.assertEqual(coord.wait(timeout=240), 0, self.log(tag)[-3000:])
        for i, p in enumerate(procs):
            if i not in victims:
                self.assertEqual(p.wait(timeout=60), 0, self.log(f"{tag}-edge-{i}")[-2000:])
        for g, (proc, _) in enumerate(aggs):
            self.assertEqual(proc.wait(timeout=30), 0, self.log(f"{tag}-agg-{g}")[-2000:])
            # Each group's sum holds its survivors; those that shared keys and died had their
            # pairwise masks removed through their neighbours' shares.
            self.assertRegex(self.log(f"{tag}-agg-{g}"),
                             rf"round 2: the secure sum of {per_group - dropped} survivors sent up "
                             rf"\({dropped} dropped after sharing keys\)")
        closed = {e["round"]: e for e in read_events(self.path(f"{tag}-out", "events.jsonl"))
                  if e["event"] == "round_closed"}
        self.assertEqual(sorted(closed), [1, 2])
        self.assertEqual(closed[1]["accepted"], CLIENTS)
        self.assertEqual(closed[2]["accepted"], CLIENTS - len(victims))
        found = re.search(r"final model: .* \(hash ([0-9a-f]{16})\)", self.log(tag))
        self.assertIsNotNone(found, self.log(tag)[-2000:])
        print(f"secure aggregation with {len(victims)} of {CLIENTS} clients killed after sharing "
              f"keys: round 2 closed with {closed[2]['accepted']} masked inputs")

    def test_pace_steering_sends_idle_clients_away_and_they_come_back(self):
        tag = "pace"
        # Rounds of two fifths of the clients (12 of 30, 6 of 15), each opening once all are
        # connected; each aggregator keeps 2 idle clients and sends the others away for 0.3-0.8 s:
        # each round waits for them to come back (to the same aggregator).
        per_round = CLIENTS * 2 // 5
        toml = run_toml("dense", rounds=6).replace(
            f"clients_per_round = {CLIENTS}\nmin_available = {CLIENTS}\nmin_completed = {CLIENTS}",
            f"clients_per_round = {per_round}\nmin_available = {CLIENTS}\nmin_completed = {per_round}")
        toml = "[pace]\nmax_idle = 2\ncome_back_s = 0.3\nwindow_s = 0.5\n" + toml
        coord, addr = self.start_coordinator(toml, name=tag)
        aggs = [self.start_aggregator(f"{tag}-agg-{g}", addr) for g in range(GROUPS)]
        procs = self.clients(tag, [a for _, a in aggs])
        self.assertEqual(coord.wait(timeout=240), 0, self.log(tag)[-3000:])
        for g, (proc, _) in enumerate(aggs):
            self.assertEqual(proc.wait(timeout=30), 0, self.log(f"{tag}-agg-{g}")[-2000:])
        # A client away when the run ended finds its aggregator gone and would retry forever.
        for p in procs:
            if p.poll() is None:
                p.terminate()
            p.wait(timeout=30)
        closed = [e for e in read_events(self.path(f"{tag}-out", "events.jsonl"))
                  if e["event"] == "round_closed"]
        self.assertEqual([e["round"] for e in closed], [1, 2, 3, 4, 5, 6])
        for e in closed:
            self.assertEqual(e["accepted"], per_round, e)
        sent_away, came_back = 0, 0
        for g in range(GROUPS):
            log = self.log(f"{tag}-agg-{g}")
            for idle, held in re.findall(r"pace steering sent (\d+) of (\d+) idle clients away", log):
                self.assertEqual(int(held) - int(idle), 2, log[-2000:])
                sent_away += int(idle)
            joins = re.findall(r"client (edge-\d+) joined", log)
            came_back += len(joins) - len(set(joins))
        print(f"pace steering: {sent_away} times a client was sent away, {came_back} times one "
              f"came back and joined its aggregator again")
        self.assertGreater(sent_away, 0)
        self.assertGreater(came_back, 0)

    def test_an_aggregator_killed_mid_round_loses_no_accepted_update(self):
        tag = "failover"
        # The cnn, 10 epochs of its client's examples: round 2's training takes long enough to
        # kill an aggregator in the middle of it (checked below, not assumed).
        coord, addr = self.start_coordinator(
            run_toml("dense", rounds=4, model="cnn", epochs=10,
                     min_completed=CLIENTS - CLIENTS // GROUPS), name=tag)
        aggs = [self.start_aggregator(f"{tag}-agg-{g}", addr) for g in range(GROUPS)]
        procs = self.clients(tag, [a for _, a in aggs], failover=True, model="cnn")
        victim = f"{tag}-agg-0"
        self.wait_for("round 2's tasks at the victim",
                      lambda: re.search(r"round 2: \d+ tasks sent", self.log(victim)))
        aggs[0][0].send_signal(signal.SIGKILL)
        aggs[0][0].wait(timeout=30)
        # It died in the middle of round 2: its group's result for that round never left it.
        self.assertNotRegex(self.log(victim), r"round 2: \d+ updates",
                            "the victim finished round 2 before it was killed")
        self.finish(tag, coord, procs)
        for g in (1, 2):
            self.assertEqual(aggs[g][0].wait(timeout=30), 0, self.log(f"{tag}-agg-{g}")[-2000:])

        events = read_events(self.path(f"{tag}-out", "events.jsonl"))
        accepted = {}  # round -> {client: via}
        for e in events:
            if e["event"] == "update_accepted":
                self.assertNotIn(e["client"], accepted.setdefault(e["round"], {}))
                accepted[e["round"]][e["client"]] = e.get("via")
        closed = {e["round"]: e for e in events if e["event"] == "round_closed"}
        self.assertEqual(sorted(closed), [1, 2, 3, 4])
        group = {f"edge-{i}": i % GROUPS for i in range(CLIENTS)}
        for r in (1, 2, 3, 4):
            # What a round's summary counts is exactly the updates it accepted.
            self.assertEqual(closed[r]["accepted"], len(accepted[r]), r)
        # Round 2: every update of the surviving groups was accepted, each through its own
        # aggregator; the victim's clients are the round's dropped ones.
        survivors = {c: f"{tag}-agg-{g}" for c, g in group.items() if g != 0}
        self.assertEqual({c: v for c, v in accepted[2].items() if c in survivors}, survivors)
        self.assertEqual(closed[2]["dropped"], CLIENTS - len(accepted[2]))
        self.assertGreaterEqual(len(accepted[2]), len(survivors))
        # Rounds 3 and 4: all of them, the victim's clients through one of the other aggregators (each
        # draws which), the others through their own.
        others = {f"{tag}-agg-1", f"{tag}-agg-2"}
        for r in (3, 4):
            self.assertEqual(len(accepted[r]), CLIENTS, r)
            for c, g in group.items():
                if g == 0:
                    self.assertIn(accepted[r][c], others, (r, c))
                else:
                    self.assertEqual(accepted[r][c], f"{tag}-agg-{g}", (r, c))
        moved = [accepted[4][f"edge-{i}"] for i in range(0, CLIENTS, GROUPS)]
        print(f"the victim's {len(moved)} clients moved to: "
              + ", ".join(f"{a}: {moved.count(a)}" for a in sorted(others)))
        survivors_at = f"trying ({re.escape(aggs[1][1])}|{re.escape(aggs[2][1])})"
        for i in range(0, CLIENTS, GROUPS):
            self.assertRegex(self.log(f"{tag}-edge-{i}"), survivors_at)
        self.assertRegex(self.log(tag), rf"aggregator {victim} \(.*\) left.*its {CLIENTS // GROUPS} "
                                        r"clients leave with it")

    def test_a_coordinator_killed_and_resumed_under_the_tier_gives_the_one_coordinator_model(self):
        alone = self.one_coordinator("alone", "dense", rounds=ROUNDS)
        tag = "resumed"
        port = free_port()
        toml = run_toml("dense", rounds=ROUNDS,
                        output=f'checkpoint_dir = "{self.path(tag + "-out")}"\n')
        coord, addr = self.start_coordinator(toml, name=tag, port=port)
        aggs = [self.start_aggregator(f"{tag}-agg-{g}", addr) for g in range(GROUPS)]
        procs = self.clients(tag, [a for _, a in aggs])
        events = self.path(f"{tag}-out", "events.jsonl")
        self.wait_for("round 2's checkpoint", lambda: os.path.exists(events) and any(
            e["event"] == "checkpoint_written" and e["round"] == 2 for e in read_events(events)))
        coord.send_signal(signal.SIGKILL)
        self.assertEqual(coord.wait(timeout=30), -signal.SIGKILL, "it ended before the kill")
        # The aggregators keep their clients and reconnect; the coordinator resumes on its port.
        again, _ = self.start_coordinator(toml, name=f"{tag}-2", port=port, args=["--resume"])
        model = self.finish(f"{tag}-2", again, procs, clients_tag=tag)
        # It resumed mid-run, and the rounds after that went through the tier.
        log = read_events(events)
        starts = [i for i, e in enumerate(log) if e["event"] == "run_started"]
        self.assertEqual(len(starts), 2)
        resumed_at = log[starts[1]]["rounds_done"]
        self.assertIn(resumed_at, range(2, ROUNDS))
        after = log[starts[1]:]
        vias = {e.get("via") for e in after if e["event"] == "update_accepted"}
        self.assertEqual(vias, {f"{tag}-agg-{g}" for g in range(GROUPS)})
        print(f"coordinator killed after round {resumed_at} of {ROUNDS}, resumed")
        for g, (proc, _) in enumerate(aggs):
            self.assertEqual(proc.wait(timeout=30), 0, self.log(f"{tag}-agg-{g}")[-2000:])
            self.assertIn("lost the coordinator", self.log(f"{tag}-agg-{g}"))
        print(f"one coordinator {alone}, tier with the coordinator killed and resumed {model}")
        self.assertEqual(model, alone)

    def test_a_client_certificate_cannot_act_as_an_aggregator(self):
        coord, addr = self.start_coordinator(run_toml("dense", rounds=1), name="hijack")
        # edge-0's certificate in the aggregator's place: refused at its AggregatorHello.
        ca, cert, key = self.client_tls("edge-0")
        proc = self.start("fake-agg", [AGGREGATOR, "--coordinator", addr, "--listen",
                                       "127.0.0.1:0", "--ca", ca, "--cert", cert, "--key", key])
        self.assertEqual(proc.wait(timeout=30), 1, self.log("fake-agg"))
        self.assertIn("only a certificate made with `tributary-certs aggregator`",
                      self.log("fake-agg"))
        coord.terminate()
        coord.wait(timeout=30)

    def test_bad_addresses_are_refused_at_start_naming_the_flag(self):
        # They were retried for ever (--coordinator) or found only after the coordinator's
        # welcome (--listen); a client given the same addresses exits at once.
        ca, cert, key = self.client_tls("edge-0")
        cases = [(["--coordinator", "localhost"], "--coordinator 'localhost': address 'localhost' "
                                                  "has no :port"),
                 (["--coordinator", "127.0.0.1:1,127.0.0.1:2"], "one coordinator, HOST:PORT"),
                 (["--coordinator", "127.0.0.1:1", "--listen", "127.0.0.1"],
                  "--listen '127.0.0.1': address '127.0.0.1' has no :port")]
        for i, (flags, message) in enumerate(cases):
            proc = self.start(f"bad-agg-{i}", [AGGREGATOR] + flags +
                              ["--ca", ca, "--cert", cert, "--key", key])
            self.assertEqual(proc.wait(timeout=10), 2, self.log(f"bad-agg-{i}"))
            self.assertIn(message, self.log(f"bad-agg-{i}"))


if __name__ == "__main__":
    unittest.main()
