from __future__ import annotations

from tokprof.profile import Profile


class JsonRenderer:
    """The profile as JSON (the documented schema, ``schema_version`` 1)."""

    def render(self, profile: Profile, color: bool = False) -> str:
        return profile.to_json()
