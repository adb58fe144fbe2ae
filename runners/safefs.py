"""``safefs://``: kombu's filesystem transport with its message race fixed.

The stock transport creates a message file and only then writes it; a consumer
polling in between reads an empty file, fails to decode it and the worker dies
(kombu issue #1551, seen here in 2 of 6 runs).  This subclass writes each
message to a dot-file and renames it into place atomically, and treats an
exchange table that is still being created as empty.  Relies on kombu 5.7.0
internals (pinned in pyproject.toml).

Importing this module registers the ``safefs`` alias; the broker is usable by
every process on one host that shares the two folders (``data_folder_in`` =
``data_folder_out`` and ``control_folder``).
"""
from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        final = os.path.join(self.data_folder_out, "{}_{}.{}.msg".format(
            int(round(monotonic() * 1000)), uuid.uuid4(), queue))
        tmp = os.path.join(self.data_folder_out, ".{}.tmp".format(uuid.uuid4().hex))
        with open(tmp, "wb") as f:
            f.write(str_to_bytes(dumps(payload)))
        os.replace(tmp, final)

    def get_table(self, exchange):
        file = self._exchange_file(exchange)
        try:
            with file.open("r") as f:
                filesystem.lock(f, filesystem.LOCK_SH)
                try:
                    data = f.read()
                finally:
                    filesystem.unlock(f)
        except FileNotFoundError:
            return []
        if not data.strip():
            return []
        return [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(data))]

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        # the stock method decodes an exchange file that another process may have
        # just created empty; serialise binds through one lock file instead.
        self.control_folder.mkdir(parents=True, exist_ok=True)
        lock_path = self.control_folder / ".bind.lock"
        with open(lock_path, "a+b") as lk:
            filesystem.lock(lk, filesystem.LOCK_EX)
            try:
                file = self._exchange_file(exchange)
                entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
                table = self.get_table(exchange)
                if entry in table:
                    return
                table.insert(0, entry)
                tmp = self.control_folder / f".{uuid.uuid4().hex}.tmp"
                tmp.write_bytes(str_to_bytes(dumps(table)))
                os.replace(tmp, file)
            finally:
                filesystem.unlock(lk)


class Transport(filesystem.Transport):
    Channel = Channel


TRANSPORT_ALIASES.setdefault("safefs", "runners.safefs:Transport")
