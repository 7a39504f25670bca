#!/usr/bin/python3
"""The character-level reference model (issue 33): examples/text/char_data.py turns a real text
(the GPL-3 from Debian's base-files, /usr/share/common-licenses/GPL-3) into windows of 32
characters, and tributary-train trains examples/models/char_lstm.toml (an embedding, an LSTM of 128
units, a dense head over 97 characters) on them. After 3 epochs it must predict the next character
of the held-out tenth of the text far better than always guessing the most frequent character
(the space: 17.4% of them). Measured: 42.3% after 3 epochs, about 11 s on 2 cores.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

TRAIN = os.environ.get("TRIBUTARY_TRAIN_BIN")
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TEXT = "/usr/share/common-licenses/GPL-3"


@unittest.skipUnless(TRAIN, "run through ctest, which names tributary-train")
class CharLstmTest(unittest.TestCase):
    def test_the_char_lstm_learns_to_predict_the_next_character(self):
        self.assertTrue(os.path.exists(TEXT), f"{TEXT} (Debian's base-files) is missing")
        with tempfile.TemporaryDirectory(prefix="trib_char_") as d:
            prefix = os.path.join(d, "gpl3")
            made = subprocess.run([sys.executable, os.path.join(SOURCE, "examples/text/char_data.py"),
                                   TEXT, prefix], capture_output=True, text=True, timeout=60)
            self.assertEqual(made.returncode, 0, made.stderr)
            counts = [int(n) for n in re.findall(r"(\d+) windows", made.stdout)]
            self.assertEqual(len(counts), 2, made.stdout)
            self.assertGreater(counts[0], 10000)

            import numpy as np
            y = np.load(f"{prefix}.test.npz")["y"]
            baseline = np.bincount(y).max() / len(y)  # always the most frequent character
            out = subprocess.run([
                TRAIN, "--model", os.path.join(SOURCE, "examples/models/char_lstm.toml"),
                "--dataset", "files", "--train-data", f"{prefix}.train.npz",
                "--test-data", f"{prefix}.test.npz", "--num-classes", "97",
                "--set", "fit.optimizer=adam", "--lr", "0.005", "--epochs", "3",
                "--threads", "2"], capture_output=True, text=True, timeout=280)
            log = out.stdout + out.stderr
            self.assertEqual(out.returncode, 0, log)
            self.assertIn("model char_lstm (88817 parameters)", log)
            accuracy = float(re.search(r"final test accuracy: ([0-9.]+)%", log).group(1)) / 100
            print(f"char_lstm on the GPL-3: {accuracy:.1%} of the held-out next characters "
                  f"(the most frequent character alone: {baseline:.1%})")
            self.assertGreater(accuracy, baseline + 0.15, log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
