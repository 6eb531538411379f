"""tokprof.base.gc_freeze.frozen: the collector skips what the process held on entry, and is set back."""

from __future__ import annotations

import gc

from tokprof.base.gc_freeze import frozen


def test_frozen_freezes_and_sets_back():
    assert gc.get_freeze_count() == 0
    with frozen():
        assert gc.get_freeze_count() > 0
        with frozen():  # an inner one leaves the outer one's freeze alone
            pass
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_frozen_leaves_a_caller_s_freeze_and_a_disabled_collector_alone():
    gc.freeze()
    try:
        count = gc.get_freeze_count()
        with frozen():
            pass
        assert gc.get_freeze_count() == count  # not undone
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with frozen():
            assert gc.get_freeze_count() == 0
    finally:
        gc.enable()


def test_a_profile_leaves_the_collector_as_it_was(tmp_path):
    import json

    from tokprof.formats import read_trace
    from tokprof.models import resolve_model
    from tokprof.profiling import profile_trace

    log = tmp_path / "one.json"
    log.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
    )
    profile_trace(read_trace(str(log)), resolve_model("qwen2.5"))
    assert gc.get_freeze_count() == 0 and gc.isenabled()
