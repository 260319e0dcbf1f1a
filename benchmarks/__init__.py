"""Benchmark suite of manifold_dirac (``python benchmarks/run.py``; see docs/performance.md)."""
