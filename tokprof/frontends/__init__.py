"""The front ends: the CLI and its commands, `serve`, `record`, `watch`, `statusline`, the GitHub Action
and the Dask runner. They use the public API (``from tokprof import ...``) and each other only."""
