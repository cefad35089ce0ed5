"""Parts of benchmarks/serve.py: the llama.cpp server it compares against, and its RESULTS.md section."""
