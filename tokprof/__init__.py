"""tokprof: where do my prompt tokens go?"""

__version__ = "0.1.0"
