"""``manage.py make_runner_token [--uses N] [--expires-hours H] [--note TEXT] [--replaces NAME]``:
print a new registration token (shown once; only its hash is stored).  It registers new
runner names only, and with --replaces the one registered runner NAME too."""
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from webapp.runners.models import RegistrationToken


class Command(BaseCommand):
    help = "Create a runner registration token and print it (once)."

    def add_arguments(self, parser):
        parser.add_argument("--uses", type=int, default=1, help="registrations allowed (0: unlimited; default 1)")
        parser.add_argument("--expires-hours", type=float, default=None, help="valid this long (default: forever)")
        parser.add_argument("--note", default="", help="what the token is for")
        parser.add_argument("--replaces", default="", help="a registered runner name it may take over")

    def handle(self, *args, uses, expires_hours, note, replaces, **options):
        if uses < 0:
            raise CommandError("--uses must be >= 0")
        if expires_hours is not None and expires_hours <= 0:
            raise CommandError("--expires-hours must be positive")
        _, raw = RegistrationToken.issue(note=note, uses=uses or None, replaces=replaces,
                                         expires_in=timedelta(hours=expires_hours) if expires_hours else None)
        self.stdout.write(raw)
