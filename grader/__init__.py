"""seqgrade: the grader for the sequence-models course (hidden suites, diagnosis, sandbox)."""

__version__ = "0.1.0"
