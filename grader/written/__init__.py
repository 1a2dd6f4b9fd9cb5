"""Written answers: answers.toml, coercion, grading, and the safe expression checker (expr/)."""
