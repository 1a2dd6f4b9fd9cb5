"""The topics of a4's hidden suite, one module each; grader.suites.a4_transformer assembles
them into the assignment."""
