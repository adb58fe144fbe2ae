"""expand T at L for a kernel-level temp: golden text, one test per refusal reason, and the
outputs after the expansions that let a contraction be cut out of its loop (PolyBench doitgen)."""
from __future__ import annotations

import pytest

from dojo_core.parser import parse
from dojo_core.printer import print_program

from kernels_text import kernel_text
from transform_checks import applied, assert_refused, assert_same_outputs

DOITGEN = kernel_text("doitgen(NR = 3, NQ = 4, NP = 5)",
                      "inout A: f64[NR, NQ, NP]; in C4: f64[NP, NP]; temp sum: f64[NP]", """\
for r in 0..NR:
  for q in 0..NQ:
    for p in 0..NP:
      sum[p] = 0
      for s in 0..NP:
        sum[p] += A[r, q, s] * C4[s, p]
    for p2 in 0..NP:
      A[r, q, p2] = sum[p2]
""")

CARRIED = """\
kernel carry(N = 4, M = 5)
in  x: f64[N, M]
out y: f64[N, M]
temp t: f64[M]

for p in 0..M:
  t[p] = 0
for i in 0..N:
  for j in 0..M:
    t[j] += x[i, j]
  for j2 in 0..M:
    y[i, j2] = t[j2]
"""

PARTIAL = DOITGEN.replace("    for p in 0..NP:\n      sum[p] = 0\n      for s",
                          "    for p in 0..NP - 1:\n      sum[p] = 0\n    for p9 in 0..NP:\n"
                          "      for s")


steps = applied


def same_outputs(before, after):
    assert_same_outputs(before, after, seed=3, rtol=1e-12, atol=1e-12)


def test_expand_a_temp_golden():
    p = steps(DOITGEN, "fission p after s0", "expand sum at q", "fission q after p",
              "fission q2 after p3", "expand sum at r")
    assert print_program(p).split("\n\n", 1)[1] == """\
for r in 0..NR:
  for q in 0..NQ:
    for p in 0..NP:
      sum[r, q, p] = 0
  for q2 in 0..NQ:
    for p3 in 0..NP:
      for s in 0..NP:
        sum[r, q2, p3] += A[r, q2, s] * C4[s, p3]
  for q3 in 0..NQ:
    for p2 in 0..NP:
      A[r, q3, p2] = sum[r, q3, p2]
"""
    assert "temp  sum: f64[NR, NQ, NP]" in print_program(p)
    same_outputs(parse(DOITGEN), p)


@pytest.mark.parametrize("source,prefix,step,reason", [
    (CARRIED, (), "expand t at i", "'t' is used outside loop 'i'"),
    (PARTIAL, (), "expand sum at q",
     "the first statement of loop 'q' that touches 'sum' does not store every element of it"),
    (DOITGEN, (), "expand sum at s", "'sum' is used outside loop 's'"),
    (DOITGEN, (), "expand nope at q", "'nope' is not a local declared directly in the body"),
])
def test_refusal_reasons(source, prefix, step, reason):
    assert_refused(steps(source, *prefix), step, reason)
