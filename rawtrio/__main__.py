import sys

from rawtrio.cli import main

sys.exit(main())
