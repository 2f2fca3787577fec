"""`python -m devtools.soak`: see the package's docstring."""

import sys

from devtools.soak.cli import main

if __name__ == "__main__":
    sys.exit(main())
