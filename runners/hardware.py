"""The hardware fingerprint a runner reports when it registers.

``fingerprint()`` -> {"cpu": {"model", "arch", "flags", "cores", "logical_cpus"},
"memory_bytes", "os": {"system", "release", "distro", "libc"}, "compilers":
{name: version line}, "gpus": [{"name", "memory_mib", "driver", "compute_cap"}],
"python", "host"}.  Everything is best effort: a missing tool reads as absent, never an
error.  ``gpus`` comes from ``nvidia-smi`` and is [] where there is none.

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
import re
import shutil
import subprocess

# ISA extensions worth knowing for generated code (x86, Arm, RISC-V names in /proc/cpuinfo)
INTERESTING_FLAGS = (
    "sse2", "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512cd",
    "avx512bw", "avx512dq", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
    "asimd", "asimdhp", "asimddp", "fphp", "sve", "sve2", "bf16", "i8mm", "sme",
    "v", "zvfh",
)


def _run(cmd, timeout=10) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (out.stdout or out.stderr or "").strip() if out.returncode == 0 else ""


def _cpuinfo() -> dict:
    info = {"model": platform.processor() or platform.machine(), "flags": []}
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return info
    physical = set()
    phys_id = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key in ("model name", "hardware", "cpu model", "uarch") and value and "model_set" not in info:
            info["model"], info["model_set"] = value, True
        elif key in ("flags", "features", "isa") and not info["flags"]:
            found = set(value.split())
            if key == "isa":                       # RISC-V: rv64imafdcv_zicsr...
                found = set(re.findall(r"_(z\w+)", value)) | ({"v"} if re.match(r"rv\d+\w*v", value) else set())
            info["flags"] = sorted(f for f in found if f in INTERESTING_FLAGS)
        elif key == "physical id":
            phys_id = value
        elif key == "core id":
            physical.add((phys_id, value))
    info.pop("model_set", None)
    if physical:
        info["cores"] = len(physical)
    return info


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
        text = _run([path, "--version"])
        if not text:
            continue
        lines = text.splitlines()
        if name == "nvcc":
            release = [l for l in lines if "release" in l]
            found[name] = (release or lines)[-1].strip()
        else:
            found[name] = lines[0].strip()
    return found


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
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    text = _run([smi, "--query-gpu=name,memory.total,driver_version,compute_cap",
                 "--format=csv,noheader,nounits"], timeout=20)
    if not text:      # older drivers do not know compute_cap
        text = _run([smi, "--query-gpu=name,memory.total,driver_version",
                     "--format=csv,noheader,nounits"], timeout=20)
    return parse_nvidia_smi(text)


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
    from dojo_core.cross import check_route
    from .emulated import emulated_target, emulator_text
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
