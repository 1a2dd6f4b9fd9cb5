"""Grading one submission: locate, run in the worker, compare, diagnose, score."""
