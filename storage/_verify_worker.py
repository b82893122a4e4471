"""Entry point of the signature helper process (see storage._verify)."""

import sys

from storage._verify import worker_main

sys.exit(worker_main())
