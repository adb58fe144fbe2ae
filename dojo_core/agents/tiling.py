"""Register-tile shapes and reduction blocks derived from the target and the dtype.

Nothing here is fitted to one ISA or one dtype: every number comes from the target
description (``codegen.targets.Target``: vector width, vector registers) and the element
size, so the same code proposes AVX-512, AVX2, NEON, SVE and RVV tiles for f64, f32, f16 or
integers.

The model is the textbook one of a GEMM micro-kernel (the outer-product form the ``tile``
macro builds): an ``rows x (vectors * lanes)`` tile of the output stays in registers; each
step of the reduction loads ``vectors`` vectors of the packed panel and broadcasts ``rows``
scalars, then does ``rows * vectors`` fused multiply-adds. It needs
``rows * vectors`` accumulators + ``vectors`` panel registers + 1 broadcast register, at
most the target's vector registers (a spilled accumulator costs a load and a store per
FMA), and it reuses each loaded value ``2 * rows * vectors / (rows + vectors)`` times
(FMAs per load, doubled): the higher, the further from load-bound. ``register_tiles``
ranks the shapes that fit by whether they leave tails, then by that reuse.
The reduction is blocked so that the panel (``block x cols`` elements) fills half of the
L1 data cache, the other half left to the rows of the other operand.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MAX_ROWS = 8          # unrolled rows of a tile: beyond 8 the code grows without reuse gain
MAX_VECTORS = 4
DEFAULT_L1D = 32 * 1024
DEFAULT_L2 = 512 * 1024


@dataclass(frozen=True)
class TileShape:
    """One register tile: ``rows`` x ``vectors`` vectors of ``lanes`` elements."""
    rows: int
    vectors: int
    lanes: int
    registers: int        # vector registers it holds during the reduction
    reuse: float          # FMAs per loaded vector, doubled (see the module docstring)

    @property
    def cols(self) -> int:
        return self.vectors * self.lanes


def register_tiles(target, itemsize: int, rows_extent=None, cols_extent=None,
                   limit: int = 4) -> list:
    """``limit`` tile shapes that fit the target's registers for elements of ``itemsize``
    bytes and smaller than the extents: the best half of those that divide the extents (a tail makes
    the unrolled rows and the vector loop bounds non-constant, which ``unroll`` and the
    explicit ``vector`` lowering need), then the best of the rest: those whose columns
    divide first (a tail of rows costs one shorter tile of the same code, which ``partition``
    gives constant extents; a tail of columns costs partial vectors in every row tile), then
    by reuse. Ordered tail-free first, then row tails before column tails, then by reuse,
    then fewer registers. Never empty."""
    lanes = target.lanes(itemsize)
    shapes = []
    for vectors in range(1, MAX_VECTORS + 1):
        for rows in range(1, MAX_ROWS + 1):
            registers = rows * vectors + vectors + 1
            if registers > target.vector_registers and (rows, vectors) != (1, 1):
                break
            shapes.append(TileShape(rows, vectors, lanes, registers,
                                    2 * rows * vectors / (rows + vectors)))

    def column_tail(shape):
        return cols_extent is not None and cols_extent % shape.cols != 0

    def tails(shape):
        return (rows_extent is not None and rows_extent % shape.rows != 0) + column_tail(shape)

    def fits(shape):          # a split by the whole extent would tile nothing
        return (rows_extent is None or shape.rows < rows_extent) and \
            (cols_extent is None or shape.cols < cols_extent)

    fitting = [s for s in shapes if fits(s)] or shapes[:1]
    by_reuse = sorted(fitting, key=lambda s: (column_tail(s), -s.reuse, s.registers))
    whole = [s for s in by_reuse if not tails(s)]
    chosen = whole[:max(1, limit // 2)]
    chosen += [s for s in by_reuse if s not in chosen][:limit - len(chosen)]
    return sorted(chosen, key=lambda s: (tails(s), column_tail(s), -s.reuse, s.registers))


def row_tiles(target, itemsize: int, cols_extent=None, limit: int = 2) -> list:
    """Shapes for a tile with no row loop (``rows`` is 1): the widest that fit, those
    dividing ``cols_extent`` first."""
    lanes = target.lanes(itemsize)
    shapes = [TileShape(1, v, lanes, 2 * v + 1, 2 * v / (1 + v))
              for v in range(MAX_VECTORS, 0, -1) if 2 * v + 1 <= target.vector_registers]
    shapes.sort(key=lambda s: (cols_extent is not None and s.cols >= cols_extent,
                               cols_extent is not None and cols_extent % s.cols != 0))
    return shapes[:limit]


def reduction_blocks(target, itemsize: int, cols: int) -> list:
    """Reduction block sizes (powers of two, largest first) whose panel of ``block x cols``
    elements fills at most half of the L1 data cache; the largest and its half."""
    room = l1_data_bytes(target) // 2
    block = 1
    while 2 * block * cols * itemsize <= room:
        block *= 2
    return [b for b in (block, block // 2) if b >= 1]


def l1_data_bytes(target) -> int:
    """The L1 data cache of this machine when the target is native (sysfs), else 32 KiB,
    the size of every core these targets name (Zen, Skylake, Neoverse, SiFive X280)."""
    return (_host_cache(1) or DEFAULT_L1D) if _native(target) else DEFAULT_L1D


def l2_bytes(target) -> int:
    """The (per-core) L2 cache of this machine when the target is native (sysfs), else
    512 KiB (Zen 2-3, Skylake client, Neoverse N1: the least of the cores the targets name)."""
    return (_host_cache(2) or DEFAULT_L2) if _native(target) else DEFAULT_L2


def _native(target) -> bool:
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine(), platform.machine())
    return target.arch == machine


@lru_cache(maxsize=4)
def _host_cache(level: int) -> int:
    """The size in bytes of this core's data (or unified) cache of this level; 0 unknown."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            found = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        if found == str(level) and kind in ("Data", "Unified"):
            scale = {"K": 1024, "M": 1024 * 1024}.get(size[-1:], 1)
            digits = size.rstrip("KM")
            if digits.isdigit():
                return int(digits) * scale
    return 0
