"""What a tool catalogue costs, as data: per tool and per catalogue.

The figures are worked out by :mod:`tokprof.analyses.tools`; they live here, before the profile,
because a profile keeps its log's main catalogue (the ``catalogue`` section of its summary), so
that a saved profile can be checked and reported on again without the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ToolCost:
    """One tool's cost per request (``marginal``), split into its description and the rest, and
    what the log did with it (``requests`` that carried it, ``calls`` the model made to it)."""

    name: str
    marginal: int
    description_tokens: int
    parameter_tokens: int
    parameters: int
    requests: int | None = None
    calls: int | None = None

    @property
    def run_cost(self) -> int | None:
        return None if self.requests is None else self.marginal * self.requests

    @property
    def unused(self) -> bool | None:
        return None if self.calls is None else self.calls == 0

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "marginal": self.marginal,
            "description_tokens": self.description_tokens,
            "parameter_tokens": self.parameter_tokens,
            "parameters": self.parameters,
            "requests": self.requests,
            "calls": self.calls,
            "run_cost": self.run_cost,
            "unused": self.unused,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "ToolCost":
        return cls(
            name=d["name"],
            marginal=d["marginal"],
            description_tokens=d["description_tokens"],
            parameter_tokens=d["parameter_tokens"],
            parameters=d["parameters"],
            requests=d.get("requests"),
            calls=d.get("calls"),
        )


@dataclass
class Catalogue:
    """A catalogue's cost per request: the sum of its tools' marginal costs and the scaffolding a
    template adds once whenever any tool exists; and two what-ifs."""

    total: int
    scaffolding: int
    tools: list[ToolCost]
    trim_saving: int  # per request, descriptions cut to their first sentence
    drop_unused_saving: int | None = None  # per request, unused tools dropped
    requests: int | None = None
    first_call: int | None = None

    @property
    def run_cost(self) -> int | None:
        return None if self.requests is None else self.total * self.requests

    def to_dict(self) -> dict:
        drop_run = None
        if self.drop_unused_saving is not None and self.requests is not None:
            drop_run = self.drop_unused_saving * self.requests
        return {
            "total": self.total,
            "scaffolding": self.scaffolding,
            "requests": self.requests,
            "first_call": self.first_call,
            "run_cost": self.run_cost,
            "tools": [t.to_dict() for t in self.tools],
            "what_if": {
                "trim_descriptions_saving_per_request": self.trim_saving,
                "drop_unused_saving_per_request": self.drop_unused_saving,
                "drop_unused_saving_over_run": drop_run,
            },
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Catalogue":
        what_if = d.get("what_if") or {}
        for key, value in (
            ("total", d.get("total")),
            ("scaffolding", d.get("scaffolding")),
            ("requests", d.get("requests")),
            ("first_call", d.get("first_call")),
            ("trim_descriptions_saving_per_request", what_if.get("trim_descriptions_saving_per_request")),
            ("drop_unused_saving_per_request", what_if.get("drop_unused_saving_per_request")),
        ):
            if value is not None and type(value) is not int:
                raise ValueError(f"catalogue.{key}: expected a whole number or null")
        return cls(
            total=d["total"],
            scaffolding=d["scaffolding"],
            tools=[ToolCost.from_dict(t) for t in d["tools"]],
            trim_saving=what_if.get("trim_descriptions_saving_per_request", 0),
            drop_unused_saving=what_if.get("drop_unused_saving_per_request"),
            requests=d.get("requests"),
            first_call=d.get("first_call"),
        )


@dataclass(frozen=True)
class UnknownCall:
    """Calls the model made to a tool name the catalogue does not have, and the closest name it has."""

    name: str
    calls: int
    closest: str | None

    def to_dict(self) -> dict:
        return {"name": self.name, "calls": self.calls, "closest": self.closest}

    @classmethod
    def from_dict(cls, d: dict) -> "UnknownCall":
        return cls(name=d["name"], calls=d["calls"], closest=d.get("closest"))


@dataclass
class CatalogueSummary:
    """The catalogue a profile keeps: the one most requests carried, and what its unused tools wasted."""

    catalogue: Catalogue
    distinct_catalogues: int = 1
    unused_waste: int | None = None  # tokens over the run, when the log was profiled
    unused_waste_share: float | None = None  # of the billed input, in the catalogue's units
    unknown_tool_calls: list[UnknownCall] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            **self.catalogue.to_dict(),
            "distinct_catalogues": self.distinct_catalogues,
            "unused_waste": self.unused_waste,
            "unused_waste_share": self.unused_waste_share,
            "unknown_tool_calls": [u.to_dict() for u in self.unknown_tool_calls],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "CatalogueSummary":
        return cls(
            catalogue=Catalogue.from_dict(d),
            distinct_catalogues=d.get("distinct_catalogues", 1),
            unused_waste=d.get("unused_waste"),
            unused_waste_share=d.get("unused_waste_share"),
            unknown_tool_calls=[UnknownCall.from_dict(u) for u in d.get("unknown_tool_calls") or []],
        )
