"""`python -m grader` is the `seqgrade` command."""

import sys

from grader.app.cli import main

sys.exit(main())
