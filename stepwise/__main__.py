"""`python -m stepwise ...` is the `stepwise` command."""

import sys

from stepwise.cli import main

sys.exit(main())
