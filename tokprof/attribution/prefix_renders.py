"""Stand-in values for what is known of a prompt's prefix renders (the render of its first k messages, and the
probe of message k: message k-1 followed by a stand-in), shared by the attributor, windows
(:mod:`tokprof.attribution.window_starts`) and splicing: a render not made yet, a render that failed, a probe that
failed, and a message that starts nowhere."""

from __future__ import annotations

import numpy as np

#: A stand-in probe whose render failed (its value is 0 whatever the prompt).
FAILED_PROBE = ()
#: Prefix render lengths that are not lengths: not known yet, and the render failed.
UNKNOWN, FAILED_RENDER = -2, -1
#: Where a message starts when it starts nowhere (its prefix failed): after every other.
NEVER = np.iinfo(np.int64).max
