"""The claim of a job that came with a signed ticket (``runners.tickets``).

The runner starts such a job at once, from the ticket, and claims it over HTTP in
the background once it has run for ``delay`` seconds; a job that ends sooner
carries its claim in its result instead (``POST .../result`` with ``"claim":
true``).  Exactly one of the two happens, and either way the server makes the
claim atomically and refuses a stale attempt, another runner's job or a finished
or cancelled one (webapp/runners/services.py).  A refused (or undeliverable)
background claim stops the job: ``refused`` is then the reason, and the caller's
``should_cancel`` sees it.
"""
from __future__ import annotations

import threading
import time

from .client import Client, Refused, Unreachable


class LateClaim:
    def __init__(self, client: Client, job_id: int, attempt: int, delay: float):
        self.client, self.job_id, self.attempt = client, int(job_id), int(attempt)
        self.refused: str | None = None
        self.claimed_at: float | None = None
        self._state = "pending"            # pending -> claiming | with-result
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, delay), self._claim)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def _claim(self) -> None:
        with self._lock:
            if self._state != "pending":
                return
            self._state = "claiming"
        try:
            answer = self.client.claim(self.job_id, self.attempt)
            self.attempt = int(answer["attempt"])
            self.claimed_at = time.time()
        except Refused as exc:
            self.refused = f"claim refused: {exc}"
        except Unreachable as exc:
            self.refused = f"claim not delivered: {exc}"

    def settle(self) -> bool:
        """Call once the job has ended.  True: no claim was sent, the result must carry it;
        False: the background claim was made (wait for its answer, then see ``refused``)."""
        with self._lock:
            if self._state == "pending":
                self._state = "with-result"
                self._timer.cancel()
                return True
        self._timer.join()
        return False
