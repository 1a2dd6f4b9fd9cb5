"""What the grader writes: results.json, the terminal table and markdown, the class report."""
