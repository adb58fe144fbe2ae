"""``python -m runners --server URL --token TOKEN [--name NAME] [--labels a,b] [--emulate TARGET]``.

The runner daemon (runners.daemon).  With ``--emulate arm-neon|arm-sve|riscv-rvv`` the runner
registers the hardware of that foreign ISA (runners.hardware.emulated_fingerprint), labelled
``emulated``: each job is compiled with the target's cross toolchain and run once under
qemu-user (runners.emulated), and its result says "correct on TARGET (emulated)" (or
"incorrect ...") with no time.  A target that cannot be built and run here is refused at
start (exit 2, the reason on stderr).
"""
import sys

from .daemon import main

sys.exit(main())
