"""Flags of ``mcp2026 check consistency`` (light: the CLI builds them without importing torch)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mcp.compiler.catalog import DEFAULT_MODEL


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", default="default", help="a suite file, or a shipped suite: default, ci")
    parser.add_argument("--engines", default="", metavar="A,B,...",
                        help="candidates: native-fp32, native-int4, native-int8, native-bf16, transformers, "
                             "llamacpp, http=URL[#MODEL]")
    parser.add_argument("--reference", default="transformers", help="the reference engine (default transformers)")
    parser.add_argument("--golden", type=Path, help="compare against this golden file instead of a reference engine")
    parser.add_argument("--record-golden", type=Path, metavar="FILE", help="write the reference's outputs here")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="a catalog name, a .gguf file or a Hugging Face model folder")
    parser.add_argument("--tolerances", type=Path, help="a tolerance table (default: the shipped one)")
    parser.add_argument("--json", type=Path, help="write the JSON report here")
    parser.add_argument("--markdown", type=Path, help="write the Markdown report here")
