"""The hidden suites, one module per assignment. Never shipped in a handout."""
