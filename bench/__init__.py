"""Benchmarks: `make bench` (python -m bench). Each prints ratios against a baseline
measured in the same run, because machines here are noisy."""
