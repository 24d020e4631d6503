import sys

from tierflow.cli import main

sys.exit(main())
