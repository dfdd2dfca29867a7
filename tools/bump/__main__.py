"""``python -m tools.bump``: see tools/bump/main.py."""

import sys

from tools.bump.main import main

sys.exit(main())
