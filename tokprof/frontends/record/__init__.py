"""``tokprof record``'s recording side (issue #28): what a recording proxy writes, and how.

* :mod:`tokprof.frontends.record.redact`: credentials out of headers before anything touches disk;
* :mod:`tokprof.frontends.record.rebuild`: a streamed response rebuilt from its events, with usage;
* :mod:`tokprof.frontends.record.store`: the recording file, one traced exchange per JSONL line, mode 0600,
  in the shape tokprof's capture readers take.

* :mod:`tokprof.frontends.record.proxy`: the forwarding proxy (a Starlette app);
* :mod:`tokprof.frontends.record.run`: the ``tokprof record`` command: the proxy, the agent, the live lines.

See docs/record.md.
"""
