"""tokprof's version, in a module of its own: every layer may import it without importing the
package's public facade (``tokprof/__init__.py``), so the layers have no cycle."""

__version__ = "0.2.0"
