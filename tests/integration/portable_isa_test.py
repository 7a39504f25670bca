#!/usr/bin/python3
"""The installed x86-64 libraries and tributary-client run on any x86-64 CPU: installs the build
into a fresh prefix and disassembles every installed static library and tributary-client with
objdump. An AVX2 or AVX-512 instruction (a VEX- or EVEX-encoded one, a ymm/zmm/mask register, or
BMI1/BMI2) may only appear in a function that is chosen at run time for CPUs that have it:

- the clones of TRIB_SIMD_CLONES loops (core/simd.h): symbols ending .avx2 or .arch_x86_64_v4;
- the GEMM copies (train/cpu/gemm.h): Eigen renamed to tributary_eigen_avx2 / tributary_eigen_avx512,
  and their tributary::cpu::avx2 / avx512 entry points;
- the direct convolution copies (train/cpu/direct_conv.h): everything in tributary::cpu::avx2 and
  tributary::cpu::avx512, their namespaces (anonymous ones inside them included).

Anything else would be an illegal instruction on an Atom-class CPU (what a -march=native build
gave before). The test also checks that the dispatched copies exist (so the check cannot pass on
a build that lost them).
    portable_isa_test.py BUILD_DIR
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

BUILD = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("TRIBUTARY_BUILD_DIR")
BMI = {"andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx", "pdep", "pext", "rorx", "sarx",
       "shlx", "shrx"}
DISPATCHED = re.compile(r"(\.avx2|\.arch_x86_64_v4)(\.\d+)?$|tributary_eigen_avx(2|512)|"
                        r"_ZN9tributary3cpu(4avx2|6avx512)")


def wide_instruction(ins):
    mnemonic = ins.split()[0] if ins else ""
    return (re.match(r"^v[a-z]", mnemonic) is not None or "%ymm" in ins or "%zmm" in ins
            or re.search(r"%k[0-7]\b", ins) is not None or mnemonic in BMI)


def scan(path):
    """{symbol: count} of wide instructions outside and inside dispatched functions."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], check=True,
                         capture_output=True, text=True).stdout
    outside, inside = {}, {}
    symbol = None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if m:
            symbol = m.group(1)
            continue
        parts = line.split("\t")
        if len(parts) < 2 or not wide_instruction(parts[-1].strip()):
            continue
        bucket = inside if DISPATCHED.search(symbol or "") else outside
        bucket[symbol] = bucket.get(symbol, 0) + 1
    return outside, inside


@unittest.skipUnless(BUILD, "pass the build directory")
class PortableIsaTest(unittest.TestCase):
    def test_installed_code_has_no_wide_instructions_outside_dispatched_functions(self):
        with tempfile.TemporaryDirectory(prefix="trib_isa_") as prefix:
            subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True,
                           stdout=subprocess.DEVNULL)
            files = sorted(glob.glob(os.path.join(prefix, "lib*", "**", "*.a"), recursive=True))
            files += glob.glob(os.path.join(prefix, "bin", "tributary-client"))
            names = [os.path.basename(f) for f in files]
            for needed in ["libtributary_client.a", "libtributary_compression.a",
                           "tributary-client"]:
                self.assertIn(needed, names)
            dispatched = {}
            for f in files:
                outside, inside = scan(f)
                self.assertEqual(outside, {}, f"{os.path.basename(f)}: AVX2/AVX-512 code outside "
                                 "the run-time dispatch (symbol: instruction count)")
                dispatched[os.path.basename(f)] = inside
            # The dispatched copies are there: the check above looked at real AVX code paths.
            # (tributary-client holds the CPU engine: its GEMM copies are checked there.)
            client = dispatched["tributary-client"]
            self.assertTrue(any("tributary_eigen_avx512" in s for s in client))
            self.assertTrue(any("tributary_eigen_avx2" in s for s in client))
            for copy in ("4avx2", "6avx512"):  # the direct convolution kernels' copies
                self.assertTrue(any(s.startswith(f"_ZN9tributary3cpu{copy}") and "4Gemm" not in s
                                    for s in client))
            self.assertTrue(any(s.endswith(".avx2") for s in dispatched["libtributary_compression.a"]))
            total = sum(len(v) for v in dispatched.values())
            print(f"{len(files)} installed files, {total} dispatched functions with AVX code, "
                  "none outside", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
