"""Benchmarks with their baselines measured side by side in the same run (`python -m bench`)."""
