#!/usr/bin/python3
"""Turns a text file into next-character examples for examples/models/char_lstm.toml.

Each example is a window of 32 characters as token ids (float32, the model's input) and its label
the id of the character after it. The ids: the 95 printable ASCII characters (space to '~') are 0
to 94, the newline 95, any other character 96. Windows start every `--stride` characters; the last
`--test` fraction of the text (whole windows after the split point) is the test set, so no test
window overlaps a training one.

  python3 examples/text/char_data.py /usr/share/common-licenses/GPL-3 /tmp/gpl3
  -> /tmp/gpl3.train.npz, /tmp/gpl3.test.npz (arrays x [N, 32] and y [N], as data.dataset=files
     reads them)
"""
import argparse

import numpy as np

WINDOW = 32
VOCAB = 97


def token_ids(text):
    """The model's token id of every character."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    ids = np.where((codes >= 32) & (codes <= 126), codes - 32, 96)
    return np.where(codes == 10, 95, ids)


def windows(ids, stride):
    starts = np.arange(0, len(ids) - WINDOW, stride)
    x = np.stack([ids[s:s + WINDOW] for s in starts]).astype(np.float32)
    y = ids[starts + WINDOW].astype(np.uint8)
    return x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("text", help="a UTF-8 text file")
    parser.add_argument("out", help="output prefix: OUT.train.npz and OUT.test.npz")
    parser.add_argument("--stride", type=int, default=3, help="characters between windows")
    parser.add_argument("--test", type=float, default=0.1, help="the text's share for testing")
    args = parser.parse_args()
    with open(args.text, encoding="utf-8", errors="replace") as f:
        ids = token_ids(f.read())
    if len(ids) < 4 * WINDOW:
        raise SystemExit(f"{args.text}: {len(ids)} characters; at least {4 * WINDOW} are needed")
    split = int(len(ids) * (1 - args.test))
    for name, part in (("train", ids[:split]), ("test", ids[split:])):
        x, y = windows(part, args.stride)
        np.savez(f"{args.out}.{name}.npz", x=x, y=y)
        print(f"{args.out}.{name}.npz: {len(y)} windows of {WINDOW} characters")


if __name__ == "__main__":
    main()
