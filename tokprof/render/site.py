"""The dashboard's pages (``tokprof report DIR -o site/``): ``index.html`` over every session, and
each session's own report (``tokprof report``'s page) with a link back. Plain HTML and CSS, no
script and nothing fetched: the index opens from disk, offline, and stays small (tables, and bars
drawn as widths), at any width from a phone's to a desktop's."""

from __future__ import annotations

from html import escape

from tokprof.analyses.periods import Periods
from tokprof.analyses.site import Site, SitePage
from tokprof.pricing.spend import dollars_of
from tokprof.base.text import visible
from tokprof.profiling import missing_buckets, recorded
from tokprof.render.actions import headline
from tokprof.pricing.render import dollars

STYLE = """
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1rem;max-width:72rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.9rem}
th,td{padding:.2rem .5rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child,td.t,th.t{text-align:left;white-space:normal;overflow-wrap:anywhere;max-width:24rem}
tr:nth-child(even){background:#f4f4f4}
.bar{display:inline-block;height:.7rem;background:#4a7bd0;vertical-align:middle}
.note{color:#555;font-size:.85rem}
nav{margin-bottom:1rem}
h1,h2,p,li{overflow-wrap:anywhere}
"""


def _text(value: object) -> str:
    return escape(visible(str(value)))


def _money(value: float | None) -> str:
    return "not priced" if value is None else dollars(value)


def _table(head: list[str], rows: list[list[str]], text: tuple[int, ...] = ()) -> str:
    """A table; the columns numbered in ``text`` hold text (left-aligned, wrapped), the others figures."""
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f"<th{' class=t' if i in text else ''}>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = (f"<td{' class=t' if i in text else ''}>{cell}</td>" for i, cell in enumerate(row))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _spend_table(found: Periods) -> str:
    largest = max((row.cost or 0 for row in found.rows), default=0)
    rows = []
    for row in [*found.rows, found.total]:
        cost = None if row.cost is None else float(dollars_of(row.cost))
        share = (row.cost or 0) / largest if largest and row is not found.total else 0
        bar = f'<span class="bar" style="width:{share * 6:.2f}rem"></span>' if share else ""
        key = "<b>total</b>" if row is found.total else _text(row.key[0])
        lost = "-" if row.lost is None else dollars(float(dollars_of(row.lost)))
        rows.append([key, f"{row.sessions:,}", f"{row.calls:,}", _money(cost) + ("" if row.priced else "+"), bar, lost])
    head = [found.by[0], "sessions", "calls", "cost", "", "cache lost (est.)"]
    return _table(head, rows)


def index_page(site: Site) -> str:
    report = site.report()
    totals = report.totals()
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>tokprof: {_text(site.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>tokprof: {len(site.pages)} session{'' if len(site.pages) == 1 else 's'} in {_text(site.title)}</h1>",
        f"<p>cost {_money(totals.cost)}{'' if totals.priced else ' (some calls not priced)'}, "
        f"{totals.calls:,} calls, billed input {totals.billed_input:,} tokens</p>",
    ]
    for found in site.spend():
        parts.append(f"<h2>Spend by {found.by[0]}</h2>" + _spend_table(found))
    parts.append(
        '<p class="note">Spend from the reported usage (UTC days); cache lost (est.): a call read less '
        "than its thread's previous call left cached. Each session's page measures its misses.</p>"
    )
    parts.append("<h2>Costliest sessions</h2>")
    parts.append(
        _table(
            ["session", "agent", "project", "calls", "cost", "what to change first"],
            [
                [
                    _link(page),
                    _text(page.agent),
                    _text(page.project or "-"),
                    f"{page.row.calls:,}",
                    _money(page.row.cost),
                    _text(headline(page.action) if page.action is not None else "-"),
                ]
                for page in site.costliest()
            ],
            text=(1, 2, 5),
        )
    )
    if totals.cache_lost_by_reason:
        parts.append("<h2>Cache: dollars lost by reason</h2>")
        parts.append(
            _table(["reason", "lost"], [[_text(k), dollars(v)] for k, v in totals.cache_lost_by_reason.items()])
        )
    parts.append("<h2>Buckets over all sessions</h2>")
    missing = (
        frozenset.intersection(*(missing_buckets(p.row.not_recorded) for p in site.pages))
        if site.pages
        else frozenset()
    )
    rows = []
    for name, value in totals.buckets_billed.items():
        figure = recorded(value, name, missing)
        share = recorded(totals.shares.get(name, 0.0), name, missing)
        rows.append(
            [
                _text(name),
                "not recorded" if figure is None else f"{figure:,}",
                "not recorded" if share is None else f"{share:.1%}",
            ]
        )
    parts.append(_table(["bucket", "billed input", "share"], rows))
    parts.append("<h2>Every session</h2>")
    parts.append(
        _table(
            ["session", "agent", "project", "model", "calls", "billed input", "cost"],
            [
                [
                    _link(page),
                    _text(page.agent),
                    _text(page.project or "-"),
                    _text(page.row.model or "-"),
                    f"{page.row.calls:,}",
                    f"{page.row.billed_input:,}",
                    _money(page.row.cost),
                ]
                for page in site.pages
            ],
            text=(1, 2, 3),
        )
    )
    if site.skipped:
        parts.append("<h2>Skipped</h2><ul>")
        parts += [f"<li>{_text(s.error)}</li>" for s in site.skipped]
        parts.append("</ul>")
    parts.append("</body></html>")
    return "".join(parts) + "\n"


def _link(page: SitePage) -> str:
    """A session's link: the start of its id (the whole id as its title), as the terminal shows it."""
    ident = page.row.session
    return f'<a href="{escape(page.page)}" title="{_text(ident)}">{_text(ident[:8])}</a>'


def session_page(report_html: str) -> str:
    """A session's report with a link back to the index at its top."""
    link = '<nav><a href="index.html">&larr; all sessions</a></nav>'
    return report_html.replace("</head><body>", "</head><body>" + link, 1)
