"""`python -m devtools.corpus`: list the corpus (see the package's docstring)."""

import sys

from devtools.corpus import main

sys.exit(main())
