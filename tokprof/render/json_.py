"""A profile as JSON: the saved profile, in the documented schema (docs/schema/profile.schema.json)."""

from __future__ import annotations

from tokprof.profiling import Profile
from tokprof.render import RenderOptions


class JsonRenderer:
    """The profile as JSON (the documented schema, docs/schema/profile.schema.json)."""

    def render(self, profile: Profile, options: RenderOptions = RenderOptions()) -> str:
        return profile.to_json()
