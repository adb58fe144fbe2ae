"""``manage.py export_dataset [--out FILE]``: every measured step of every history as JSON
lines (webapp/agents/dataset.py); standard output without --out.  Prints the line count
on standard error."""
from django.core.management.base import BaseCommand, CommandError

from webapp.agents.dataset import dataset_lines


class Command(BaseCommand):
    help = "Export (state, action, measured time, runner) of all histories as JSON lines"

    def add_arguments(self, parser):
        parser.add_argument("--out", help="write to this file (default: standard output)")

    def handle(self, *args, out=None, **options):
        try:
            stream = open(out, "w", encoding="utf-8") if out else None
        except OSError as exc:
            raise CommandError(f"{out}: {exc.strerror}") from None
        n = 0
        try:
            for line in dataset_lines():
                if stream is not None:
                    stream.write(line)
                else:
                    self.stdout.write(line, ending="")
                n += 1
        finally:
            if stream is not None:
                stream.close()
        self.stderr.write(f"{n} record{'s' if n != 1 else ''}" + (f" written to {out}" if out else ""))
