"""Entry point of a Slack import's helper process (see app/slack_workers.py)."""

import sys

from app.slack_workers import worker_main

if __name__ == "__main__":
    sys.exit(worker_main())
