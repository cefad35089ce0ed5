"""Build of the CPU kernels extension; everything else is in pyproject.toml.

The extension needs only a C++20 compiler with OpenMP and the Python headers (no torch
headers, so building it never pulls torch into pip's build environment). Each instruction set is
compiled in its own region of kernels.cpp and chosen at run time, so one build runs on
any x86-64 CPU (and the plain C++ path on other CPUs).
"""

from setuptools import Extension, setup

KERNELS = "src/mcp/engine/kernels/csrc"

setup(
    ext_modules=[
        Extension(
            "mcp.engine.kernels._cpu",
            sources=[f"{KERNELS}/module.cpp", f"{KERNELS}/kernels.cpp", f"{KERNELS}/rows16.cpp",
                     f"{KERNELS}/decode.cpp"],
            depends=[f"{KERNELS}/kernels.h", f"{KERNELS}/tiles.inc", f"{KERNELS}/blocks.inc", f"{KERNELS}/qdot.inc", f"{KERNELS}/vec.inc", f"{KERNELS}/rows16.inc", f"{KERNELS}/decode.h", f"{KERNELS}/moe.inc"],
            # -fopenmp: libgomp.so.1, which resolves to torch's own copy when torch is loaded
            # first, so the kernels share torch's OpenMP threads (see kernels.cpp).
            # -falign-*: every loop and function on a 64-byte line, so that a change elsewhere
            # in the file does not move the hot loops' alignment: an unrelated change made
            # batch-1 decode 4% slower without them (12 of 12 paired rounds) and 1.00x with.
            extra_compile_args=["-std=c++20", "-O3", "-ffp-contract=off", "-fno-math-errno", "-fopenmp",
                                "-falign-loops=64", "-falign-functions=64"],
            extra_link_args=["-fopenmp"],
            language="c++",
        )
    ]
)
