"""Benchmark scripts: exact models against heuristics, measured."""
