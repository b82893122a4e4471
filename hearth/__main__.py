"""`python -m hearth`, and the packaged app's entry point (PyInstaller runs this file as
`__main__`, so its imports are absolute). `hearth --verify-worker`, the signature helper that
storage._verify starts from `sys.executable` in a packaged app, is handled by app.cli.main;
`freeze_support` lets a "spawn" multiprocessing pool (analytics.synth) start its workers from
this executable."""

import multiprocessing
import sys

from hearth.launcher import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
