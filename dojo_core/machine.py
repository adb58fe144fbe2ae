"""This machine's CPU, read once from ``/proc/cpuinfo``: the one probe that the runners'
hardware report, the records' fingerprints, the code generators' host target and the
benchmarks use, so that they cannot disagree.

``parse_cpuinfo(text)`` -> ``CpuInfo(model, words, isa, cores)``:

* ``model``: the first ``model name``, ``Hardware``, ``cpu model`` or ``uarch`` value
  (x86, Arm, MIPS, RISC-V), else ``platform.processor()`` or ``platform.machine()``;
* ``words``: every feature word of every processor: x86 ``flags``, Arm ``Features``, and
  for RISC-V the extensions of the ``isa`` line (``rv64imafdcv_zicsr_zvfh`` gives ``v``
  and ``zicsr``, ``zvfh``);
* ``isa``: the RISC-V ``isa`` line, lower-case ("" elsewhere);
* ``cores``: the physical cores (distinct physical id and core id pairs), None when the
  file does not say.

``cpu_info()`` is that of this machine (cached); without a readable ``/proc/cpuinfo`` it
has the platform's model, no words and no cores.  ``isa_flags(info)`` are the words of
``ISA_FLAGS`` it has, sorted: what a hardware fingerprint counts.  ``gpus()`` are the
NVIDIA GPUs that ``nvidia-smi`` lists ({"name", "memory_mib", "driver", "compute_cap"}),
[] without it.  Nothing here raises.
"""
from __future__ import annotations

import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

CPUINFO = "/proc/cpuinfo"

# ISA extensions worth knowing for generated code (x86, Arm, RISC-V names in /proc/cpuinfo);
# the ones a hardware fingerprint counts
ISA_FLAGS = (
    "sse2", "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512cd",
    "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
    "asimd", "asimdhp", "asimddp", "fphp", "sve", "sve2", "bf16", "i8mm", "sme",
    "v", "zvfh",
)
MODEL_KEYS = ("model name", "hardware", "cpu model", "uarch")


@dataclass(frozen=True)
class CpuInfo:
    model: str
    words: frozenset
    isa: str = ""
    cores: int | None = None


def riscv_extensions(isa: str) -> set:
    """The extensions of a RISC-V isa string: ``v`` when the base has the vector
    extension, and every ``z...`` extension."""
    isa = isa.strip().lower()
    found = set(re.findall(r"_(z[a-z0-9]+)", isa))
    if re.match(r"rv\d+[a-y]*v", isa.split("_")[0]):
        found.add("v")
    return found


def parse_cpuinfo(text: str) -> CpuInfo:
    """The CpuInfo of a /proc/cpuinfo text (see the module docstring)."""
    model = None
    words: set = set()
    isa = ""
    physical = set()
    phys_id = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key in MODEL_KEYS and value and model is None:
            model = value
        elif key in ("flags", "features"):
            words.update(value.split())
        elif key == "isa":
            isa = isa or value.lower()
            words.update(riscv_extensions(value))
        elif key == "physical id":
            phys_id = value
        elif key == "core id":
            physical.add((phys_id, value))
    return CpuInfo(model=model or platform.processor() or platform.machine(), words=frozenset(words),
                   isa=isa, cores=len(physical) or None)


def cpuinfo_text() -> str:
    """The text of /proc/cpuinfo; "" where it cannot be read."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


@lru_cache(maxsize=1)
def cpu_info() -> CpuInfo:
    """This machine's CpuInfo (read once)."""
    return parse_cpuinfo(cpuinfo_text())


def isa_flags(info: CpuInfo) -> list:
    """The ISA_FLAGS that ``info`` has, sorted."""
    return sorted(info.words & set(ISA_FLAGS))


def run_tool(cmd, timeout=10) -> str:
    """The stripped output of a command that succeeded; "" for any failure."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout or out.stderr or "").strip() if out.returncode == 0 else ""


def parse_nvidia_smi(text: str) -> list[dict]:
    """GPUs from ``nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap
    --format=csv,noheader,nounits`` output."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[0]:
            continue
        gpu = {"name": parts[0], "memory_mib": None, "driver": parts[2],
               "compute_cap": parts[3] if len(parts) > 3 and parts[3] not in ("", "[N/A]") else None}
        try:
            gpu["memory_mib"] = int(float(parts[1]))
        except ValueError:
            pass
        gpus.append(gpu)
    return gpus


def gpus() -> list[dict]:
    """This machine's NVIDIA GPUs as nvidia-smi lists them; [] without nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    text = run_tool([smi, "--query-gpu=name,memory.total,driver_version,compute_cap",
                     "--format=csv,noheader,nounits"], timeout=20)
    if not text:      # older drivers do not know compute_cap
        text = run_tool([smi, "--query-gpu=name,memory.total,driver_version",
                         "--format=csv,noheader,nounits"], timeout=20)
    return parse_nvidia_smi(text)
