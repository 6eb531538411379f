"""The front ends: the CLI and its commands, `serve`, `record`, `watch`, `statusline`, the GitHub Action
and the Dask runner. They call the jobs of :mod:`tokprof.runs` and the other modules they need directly (as
coverage.py's cmdline does); from ``tokprof`` itself they import only its public names."""
