"""``python -m riskengine.cli``: the ``riskengine`` command."""

import sys

from .entry import main

sys.exit(main())
