"""dojo_core.machine: one reading of /proc/cpuinfo for the runners' hardware report, the
records' fingerprint and the code generators' host target."""
from __future__ import annotations

import pytest

from dojo_core import machine, records
from dojo_core.codegen.targets import target_from_cpuinfo
from runners import hardware

X86 = """processor\t: 0
model name\t: AMD EPYC 9R14
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512vl
processor\t: 1
model name\t: AMD EPYC 9R14
physical id\t: 0
core id\t\t: 1
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512vl
processor\t: 2
physical id\t: 0
core id\t\t: 1
"""
ARM = "processor\t: 0\nFeatures\t: fp asimd asimdhp sve sve2 i8mm\nCPU part\t: 0xd4f\n"
RISCV = "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdcv_zicsr_zifencei_zvfh\nuarch\t\t: sifive,x280\n"


def test_x86_model_words_and_physical_cores():
    info = machine.parse_cpuinfo(X86)
    assert info.model == "AMD EPYC 9R14" and info.cores == 2 and info.isa == ""
    assert machine.isa_flags(info) == ["avx", "avx2", "avx512f", "avx512vl", "fma", "sse2"]


def test_arm_features_are_flags():
    info = machine.parse_cpuinfo(ARM)
    assert machine.isa_flags(info) == ["asimd", "asimdhp", "i8mm", "sve", "sve2"]
    assert info.cores is None


@pytest.mark.parametrize("isa, flags", [
    ("rv64imafdcv_zicsr_zvfh", ["v", "zvfh"]),
    ("rv64gcv", ["v"]),
    ("rv64imafdc_zicsr_zvfh", ["zvfh"]),          # a vector-half extension is not the V base
    ("rv64imafdc", []),
])
def test_riscv_isa_line_gives_its_extensions(isa, flags):
    assert machine.isa_flags(machine.parse_cpuinfo(f"isa\t\t: {isa}\n")) == flags


def test_unreadable_cpuinfo_is_no_error(monkeypatch):
    monkeypatch.setattr(machine, "CPUINFO", "/nonexistent/cpuinfo")
    assert machine.cpuinfo_text() == ""
    info = machine.parse_cpuinfo("")
    assert info.model and info.words == frozenset() and info.cores is None


@pytest.mark.parametrize("text, arch, target", [(X86, "x86_64", "x86-avx2"), (ARM, "aarch64", "arm-sve"),
                                                (RISCV, "riscv64", "riscv-rvv")])
def test_runner_report_local_fingerprint_and_host_target_read_the_same_cpu(monkeypatch, text, arch, target):
    monkeypatch.setattr(machine, "cpuinfo_text", lambda: text)
    machine.cpu_info.cache_clear()
    records.local_hardware.cache_clear()
    try:
        reported = hardware._cpuinfo()
        local = records.local_hardware()["cpu"]
        assert reported["model"] == local["model"] == machine.parse_cpuinfo(text).model
        assert reported["flags"] == local["flags"] == machine.isa_flags(machine.parse_cpuinfo(text))
        assert reported["flags"]                      # RISC-V's isa line included
        assert target_from_cpuinfo(text, arch).name == target
    finally:
        machine.cpu_info.cache_clear()
        records.local_hardware.cache_clear()


def test_runner_report_and_local_fingerprint_list_the_same_gpus(monkeypatch):
    smi = "NVIDIA H100 80GB HBM3, 81559, 550.54.15, 9.0\nNVIDIA H100 80GB HBM3, 81559, 550.54.15, 9.0\n"
    monkeypatch.setattr(machine.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    monkeypatch.setattr(machine, "run_tool", lambda cmd, timeout=10: smi if "nvidia-smi" in cmd[0] else "")
    records.local_hardware.cache_clear()
    try:
        reported = [g["name"] for g in hardware.fingerprint()["gpus"]]
        local = [g["name"] for g in records.local_hardware()["gpus"]]
        assert reported == local == ["NVIDIA H100 80GB HBM3"] * 2
    finally:
        records.local_hardware.cache_clear()
