"""The course: the registry of assignments, the student's variant key, the bundled content."""
