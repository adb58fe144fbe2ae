"""``manage.py reap_jobs [--loop] [--interval S]``: requeue the jobs of dead runners (one
pass, or forever). Use it when the web process does not run the reaper
(DOJO_REAPER_INTERVAL=0), e.g. as a separate service beside several web processes."""
import json
import time

from django.core.management.base import BaseCommand

from webapp.runners.reaper import reap_once


class Command(BaseCommand):
    help = "Requeue or give up the jobs of runners whose heartbeat is stale."

    def add_arguments(self, parser):
        parser.add_argument("--loop", action="store_true", help="run forever")
        parser.add_argument("--interval", type=float, default=2.0, help="seconds between passes")

    def handle(self, *args, loop, interval, **options):
        while True:
            counts = reap_once()
            if not loop:
                self.stdout.write(json.dumps(counts))
                return
            time.sleep(interval)
