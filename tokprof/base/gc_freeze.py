"""Python's cyclic garbage collector kept off what a long computation reads but does not change.

A profile holds its whole trace while it works: every call's prompt, about 10 million references at
3,000 calls. Each full collection of the collector walks all of them (0.1-0.2 s at 3,000 calls, none
of it freeing anything the trace holds), and the calls' work triggers full collections as it goes.
:func:`frozen` moves what the process holds when it starts into the collector's permanent generation
(``gc.freeze``) for the time of the work, and back (``gc.unfreeze``) after, so that collections
during the work look only at what the work makes.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """While inside, the objects alive on entry are not scanned by the collector; afterwards they are
    again (garbage among them is then collected as before, at a later full collection). Does nothing
    when the collector is off, or when something has already frozen objects (the caller's
    ``gc.freeze``, say before forking, or a :func:`frozen` outside this one): unfreezing would then
    undo theirs."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
