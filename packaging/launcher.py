"""The packaged app's entry point: the same `hearth` command line as `app.cli:main`.

PyInstaller runs this file as `__main__`, so it cannot be `app/__main__.py` (which imports
relatively). `hearth --verify-worker`, the signature helper that storage._verify starts from
`sys.executable` in a packaged app, is handled by `app.cli.main` itself; `freeze_support` lets a
"spawn" multiprocessing pool (analytics.synth) start its workers from this executable.
"""

import multiprocessing
import sys

from app.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
