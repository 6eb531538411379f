"""Chat templates, round two (#33 item 6): an operation that would make a huge string is refused
before it takes the memory; the renders of one run are bounded together; and a render is a
function of its input (no ``random``, addresses pinned, a template that renders the same input
differently twice is an error). Templates are hand-made, each a few characters of hostile Jinja."""

from __future__ import annotations

import itertools
import resource

import pytest

from conftest import CHATML, FIXTURES
from tokprof.frontends.cli import main
from tokprof.models.template import ChatTemplate, _compile

LOG = FIXTURES / "good_transcript.json"
#: A cap on this process's memory growth for the cases below would be process-wide; instead each case
#: is checked to end quickly with the limit named, and the peak is compared after (see the last test).
HUGE = [
    ("{{ 'x'.center(10**10) }}", "str.center"),
    ("{{ 'x'.ljust(10**10) }}", "str.ljust"),
    ("{{ 'x'.rjust(3 * 10**9) }}", "str.rjust"),
    ("{{ 'x'.zfill(10**10) }}", "str.zfill"),
    ("{{ 'x'|center(10**10) }}", "center"),
    ("{{ '{:>9999999999}'.format('x') }}", "str.format"),
    ("{{ '{:>{w}}'.format('x', w=10**10) }}", "str.format"),
    ("{{ '%9999999999s' % 'x' }}", "'%'"),
    ("{{ '%*s' % (10**10, 'x') }}", "'%'"),
    ("{{ '%*s'|format(10**10, 'x') }}", "format"),
    ("{{ messages|tojson(indent=10**9) }}", "tojson(indent=...)"),
    ("{{ 'x'|indent(10**10, true) }}", "indent"),
    ("{% set s = 'x' * 100000 %}{{ s.replace('', s) }}", "str.replace"),
    ("{% set s = 'x' * 100000 %}{{ s|replace('', s) }}", "replace"),
    ("{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "'~'"),
    ("{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "'+'"),
    ("{% set ns = namespace(s=[1]) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "'+'"),
    ("{% set s = 'x' * 10**6 %}{{ ([s] * 1000)|join(s) }}", "join"),
    ("{% set s = 'x' * 10**6 %}{{ s.join([s] * 300) }}", "str.join"),
]


def one_line_error(args, capsys) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and err.count("\n") == 1 and err.startswith("tokprof: error: ") and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("source, operation", HUGE, ids=[op + "-" + str(i) for i, (_, op) in enumerate(HUGE)])
def test_a_huge_string_is_refused_before_it_is_made(source, operation, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_OUTPUT", str(64 * 1024 * 1024))
    template = tmp_path / "t.jinja"
    template.write_text(source)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    err = one_line_error(["profile", str(LOG), "--chat-template", str(template)], capsys)
    assert "went over a limit" in err and "TOKPROF_TEMPLATE_MAX_OUTPUT" in err, err
    assert "too long a string or list" in err, err
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 1024, f"{operation}: the peak grew {grown_mb:.0f} MB before the limit fired"


def test_the_whole_run_has_a_time_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOKPROF_TEMPLATE_RUN_TIMEOUT", "0.2")
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_RANGE", str(10**9))
    template = tmp_path / "t.jinja"
    template.write_text("{% for a in range(10**6) %}{% endfor %}" + CHATML)  # about 50 ms a render
    err = one_line_error(["profile", str(LOG), "--chat-template", str(template)], capsys)
    assert "its renders in this run took too long together" in err and "TOKPROF_TEMPLATE_RUN_TIMEOUT" in err, err


def test_a_run_under_its_time_limit_is_unchanged(tmp_path, capsys, monkeypatch):
    template = tmp_path / "t.jinja"
    template.write_text(CHATML)
    assert main(["profile", str(LOG), "--chat-template", str(template), "-f", "json"]) == 0
    first = capsys.readouterr().out
    monkeypatch.setenv("TOKPROF_TEMPLATE_RUN_TIMEOUT", "60")
    assert main(["profile", str(LOG), "--chat-template", str(template), "-f", "json"]) == 0
    assert capsys.readouterr().out == first


#: Templates whose steps are each under the output limit but which hold or ask for gigabytes: many long
#: strings kept in a list, and a list that holds one long string many times written out whole (tojson,
#: string, printed), which no step sizes.
GREEDY = [
    "{% set ns = namespace(l=[]) %}{% for i in range(40) %}{% set ns.l = ns.l + [('x' * 10**7) ~ i] %}{% endfor %}",
    "{% set s = 'x' * 10**6 %}{{ ([s] * 10**5)|tojson }}",
    "{% set s = 'x' * 10**6 %}{{ ([s] * 10**5)|string|length }}",
    "{% set s = 'x' * 10**6 %}{{ [s] * 10**5 }}",
]


@pytest.mark.parametrize("source", GREEDY, ids=["held", "tojson", "string", "printed"])
def test_a_render_is_bounded_in_memory(source, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_MEMORY", str(64 * 1024 * 1024))
    template = tmp_path / "t.jinja"
    template.write_text(source + CHATML)
    limit = resource.getrlimit(resource.RLIMIT_DATA)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    err = one_line_error(["profile", str(LOG), "--chat-template", str(template)], capsys)
    assert "a render took more memory than it may" in err and "TOKPROF_TEMPLATE_MAX_MEMORY" in err, err
    assert "67,108,864 bytes" in err, err
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 256, f"the peak grew {grown_mb:.0f} MB under a 64 MiB limit"
    assert resource.getrlimit(resource.RLIMIT_DATA) == limit  # the process's own limit is set back


def test_a_run_under_its_memory_limit_is_unchanged(tmp_path, capsys, monkeypatch):
    template = tmp_path / "t.jinja"
    template.write_text("{% set s = 'x' * 10**6 %}{{ s|length }}" + CHATML)  # a few megabytes a render
    assert main(["profile", str(LOG), "--chat-template", str(template), "-f", "json"]) == 0
    first = capsys.readouterr().out
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_MEMORY", str(64 * 1024 * 1024))
    assert main(["profile", str(LOG), "--chat-template", str(template), "-f", "json"]) == 0
    assert capsys.readouterr().out == first


def test_the_memory_limit_is_the_process_s_so_only_the_main_thread_sets_it():
    import threading

    from tokprof.models.template import Limits, _memory_cap

    with _memory_cap(Limits()) as capped:
        assert capped
    seen = []

    def other() -> None:
        with _memory_cap(Limits()) as capped:
            seen.append(capped)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [False]


def test_random_is_not_there(tmp_path, capsys):
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages|random }}" + CHATML)
    assert "random" in one_line_error(["profile", str(LOG), "--chat-template", str(template)], capsys)


def test_addresses_are_pinned():
    source = "{{ cycler('a', 'b') }}|{{ namespace }}|{{ range }}|{{ (cycler('a')|string) ~ '' }}"
    text = ChatTemplate(source, "test").render([{"role": "user", "content": "hi"}], None, False)
    assert "0x0>" in text and not any(f"0x{d}" in text for d in "123456789abcdef"), text
    again = ChatTemplate(source, "test").render([{"role": "user", "content": "hi"}], None, False)
    assert again == text


def test_a_template_that_renders_differently_twice_is_an_error():
    from tokprof.base.errors import ModelError

    source = "{{ tick() }}" + CHATML + "{# counter #}"
    _compile(source, False).environment.globals["tick"] = itertools.count().__next__  # state outside the input
    template = ChatTemplate(source, "test-counter")
    with pytest.raises(ModelError, match="renders the same messages differently twice"):
        template.render([{"role": "user", "content": "hi"}], None, True)
    steady = ChatTemplate(CHATML, "test")
    first = steady.render([{"role": "user", "content": "hi"}], None, True)
    assert steady.render([{"role": "user", "content": "hi"}], None, True) == first


def test_ordinary_operations_still_work():
    source = (
        "{{ 'ab'.center(6, '*') }}|{{ '%-4s|' % 'x' }}{{ '{:>3}'.format(7) }}|{{ [1, 2]|tojson(indent=1) }}"
        "|{{ 'a-b'.replace('-', '+') }}|{{ 'x' ~ 1 ~ none }}|{{ [1] + [2] }}|{{ ', '.join(['a', 'b']) }}"
    )
    text = ChatTemplate(source, "test").render([], None, False)
    assert text == "**ab**|x   |  7|[\n 1,\n 2\n]|a+b|x1None|[1, 2]|a, b"


def test_a_run_reads_the_limits_at_its_first_render(monkeypatch):
    from tokprof.models.template import TemplateLimitError, template_run

    template = ChatTemplate("{{ 'x' * 5000 }}" + CHATML, "test")
    hi = [{"role": "user", "content": "hi"}]
    template.render(hi, None, False)
    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_OUTPUT", "1000")
    with pytest.raises(TemplateLimitError):  # outside a run: read at each render
        template.render(hi, None, False)
    monkeypatch.delenv("TOKPROF_TEMPLATE_MAX_OUTPUT")
    with template_run():
        template.render(hi, None, False)
        monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_OUTPUT", "1000")
        template.render(hi, None, False)  # the run's limits, read at its first render
    with template_run(), pytest.raises(TemplateLimitError):  # the next run reads them again
        template.render(hi, None, False)


def test_the_time_limit_s_signal_as_the_alarm_stops_leaves_no_handler_behind(monkeypatch):
    """The limit running out just as a render ends: its signal comes while the alarm is being
    stopped. The handler must neither raise there (leaving itself installed, its timer set again)
    nor come back later, outside any render."""
    import os
    import signal
    import time

    real = signal.setitimer
    sent: list[int] = []

    def setitimer(which, value, interval=0.0):
        if value == 0 and not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGALRM)  # the timer expires as stop() begins
        return real(which, value, interval)

    monkeypatch.setattr(signal, "setitimer", setitimer)
    before = signal.getsignal(signal.SIGALRM)
    ChatTemplate(CHATML, "test").render([{"role": "user", "content": "hi"}], None, False)
    monkeypatch.setattr(signal, "setitimer", real)
    assert sent and signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    time.sleep(0.1)  # no limit's error comes here


def test_held_limits_keep_a_run_s_time_limit(monkeypatch):
    """Renders inside held_limits are the run's: its time left stops them, as outside."""
    import time

    from tokprof.models.template import TemplateLimitError, held_limits, template_run

    monkeypatch.setenv("TOKPROF_TEMPLATE_MAX_RANGE", str(10**9))
    monkeypatch.setenv("TOKPROF_TEMPLATE_RUN_TIMEOUT", "0.2")
    slow = ChatTemplate("{% for i in range(100000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}" + CHATML, "t")
    with template_run():
        started = time.monotonic()
        with pytest.raises(TemplateLimitError, match="in this run"), held_limits():
            slow.render([{"role": "user", "content": "hi"}], None, False)
        assert time.monotonic() - started < 1
