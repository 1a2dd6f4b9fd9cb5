"""`python -m grader` is the `seqgrade` command."""

import sys

from grader.cli import main

sys.exit(main())
