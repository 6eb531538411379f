"""``python -m tokprof``: the command line, as the ``tokprof`` script starts it."""

from tokprof.frontends.launch import entry

entry()
