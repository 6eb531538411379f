from tokprof.cli import entry

entry()
