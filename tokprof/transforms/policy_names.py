"""The context policies' names as a user writes them, apart from the policies themselves
(:mod:`tokprof.transforms.policies`), so that the command line's help names them without loading them."""

from __future__ import annotations

#: The policies, as a user writes them (for help and error messages).
SYNTAX = (
    "full",
    "window:N",
    "window-tokens:T",
    "elide:K",
    "cap:C",
    "user-verbatim:K",
    "compact:P[:S]",
    "clear-tool-uses:TRIGGER:KEEP",
)
#: ``tokprof whatif`` without --policy (and without ``whatif`` in the configuration).
DEFAULT_POLICIES = ("full", "window", "elide", "cap:4000", "user-verbatim:4", "compact:80")
