"""Hash of the generated C (every CPU target) and CUDA of every library kernel, untransformed and
after each of its .steps files; run from a checkout's root: python codegen_hashes.py > out."""
import glob, hashlib, os, sys
sys.path.insert(0, os.getcwd())
from dojo_core.kernels import load_kernel
from dojo_core.steps import read_steps, replay
from dojo_core.codegen.c import generate_c
from dojo_core.codegen.cuda import generate_cuda
TARGETS = ["x86-avx512", "x86-avx2", "arm-neon", "arm-sve", "riscv-rvv"]
for path in sorted(glob.glob("dojo_core/kernels/*.dojo")):
    name = os.path.basename(path)[:-5]
    root = load_kernel(name, {})
    scheds = {"-": []}
    for s in sorted(glob.glob(f"dojo_core/kernels/{name}.steps") + glob.glob(f"dojo_core/kernels/{name}.*.steps")):
        scheds[os.path.basename(s)] = [t for _, t in read_steps(s)]
    for sname, steps in scheds.items():
        try:
            prog = replay(root, steps)
        except Exception as exc:
            print(name, sname, "replay-error", type(exc).__name__); continue
        for t in TARGETS + ["cuda"]:
            try:
                text = generate_cuda(prog) if t == "cuda" else generate_c(prog, t)
                h = hashlib.sha256(text.encode()).hexdigest()[:16]
            except Exception as exc:
                h = "refused:" + type(exc).__name__
            print(name, sname, t, h)
