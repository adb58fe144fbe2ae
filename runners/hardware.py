"""The hardware fingerprint a runner reports when it registers.

``fingerprint()`` -> {"cpu": {"model", "arch", "flags", "cores", "logical_cpus"},
"memory_bytes", "os": {"system", "release", "distro", "libc"}, "compilers":
{name: version line}, "gpus": [{"name", "memory_mib", "driver", "compute_cap"}],
"python", "host"}.  The CPU is dojo_core.machine's reading (the same as a local run's
fingerprint).  Everything is best effort: a missing tool reads as absent, never an
error.  ``gpus`` comes from ``nvidia-smi`` (dojo_core.machine) and is [] where there is none.

``emulated_fingerprint(target)`` is the hardware of an emulated runner (``python -m runners
--emulate TARGET``): the target's ISA (``cpu.arch``, ``cpu.flags``, a model naming the target
and the emulator), the cross compiler, and ``"emulated": {"target", "emulator", "compiler",
"host"}``, the machine that really runs it.  Its fingerprint therefore differs from the host's
and from any real machine of that ISA.  ``default_labels`` gives an emulated runner the labels
``emulated`` and ``emulated:TARGET`` (never ``cpu`` or its arch: a job asking for a CPU or an
ISA by label wants a measurement, which an emulated runner cannot give).
"""
from __future__ import annotations

import os
import platform
import shutil

from dojo_core.cross import check_route
from dojo_core.machine import cpu_info, gpus, isa_flags, run_tool

from .emulated import emulated_target, emulator_text

def _cpuinfo() -> dict:
    """model, flags (of ISA_FLAGS) and, where /proc/cpuinfo says, physical cores."""
    info = cpu_info()
    cpu = {"model": info.model, "flags": isa_flags(info)}
    if info.cores:
        cpu["cores"] = info.cores
    return cpu


def _memory() -> int | None:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _distro() -> str:
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return ""


def compilers() -> dict:
    found = {}
    cc = os.environ.get("DOJO_CC") or os.environ.get("CC") or "cc"
    for name in dict.fromkeys((cc, "gcc", "clang", "nvcc")):
        path = shutil.which(name)
        if not path:
            continue
        text = run_tool([path, "--version"])
        if not text:
            continue
        lines = text.splitlines()
        if name == "nvcc":
            release = [l for l in lines if "release" in l]
            found[name] = (release or lines)[-1].strip()
        else:
            found[name] = lines[0].strip()
    return found


def fingerprint() -> dict:
    """This machine's hardware (see the module docstring)."""
    cpu = _cpuinfo()
    cpu["arch"] = platform.machine()
    cpu["logical_cpus"] = os.cpu_count()
    cpu.setdefault("cores", os.cpu_count())
    libc = " ".join(platform.libc_ver()).strip()
    return {
        "cpu": cpu,
        "memory_bytes": _memory(),
        "os": {"system": platform.system(), "release": platform.release(),
               "distro": _distro(), "libc": libc},
        "compilers": compilers(),
        "gpus": gpus(),
        "python": platform.python_version(),
        "host": platform.node(),
    }


# the ISA flags an emulated target has (the /proc/cpuinfo words of such a machine)
EMULATED_FLAGS = {"arm-neon": ["asimd"], "arm-sve": ["asimd", "sve"], "riscv-rvv": ["v"]}


def emulated_fingerprint(target_name: str) -> dict:
    """The hardware of an emulated runner for a foreign target (see the module docstring);
    ValueError (why) when the target has no working cross route here."""
    target = emulated_target(target_name)
    tools = check_route(target)
    host = fingerprint()
    emulator = emulator_text(tools.emulator)
    cpu = {"model": f"{target.name} under {emulator} (emulated)", "arch": target.arch,
           "flags": list(EMULATED_FLAGS.get(target.name, [])),
           "cores": host["cpu"].get("cores"), "logical_cpus": host["cpu"].get("logical_cpus"),
           "vector_bits": 8 * target.vector_bytes}
    return {**host, "cpu": cpu, "gpus": [],
            "compilers": {"cc": tools.version},
            "emulated": {"target": target.name, "emulator": emulator, "compiler": tools.version,
                         "host": {"model": host["cpu"].get("model"), "arch": host["cpu"].get("arch")}}}


def default_labels(hw: dict) -> list[str]:
    emulated = (hw or {}).get("emulated")
    if isinstance(emulated, dict):
        return ["emulated", f"emulated:{emulated.get('target')}"]
    labels = ["gpu" if hw.get("gpus") else "cpu"]
    arch = (hw.get("cpu") or {}).get("arch")
    if arch:
        labels.append(arch)
    return labels
