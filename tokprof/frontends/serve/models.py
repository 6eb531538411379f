"""The models a server counts with: loaded once per process, and which one counts a request."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokprof.base.errors import ModelError
from tokprof.frontends.serve.answers import Rejected
from tokprof.names import model_name, registered_models

if TYPE_CHECKING:
    from tokprof.runs.model import Model


@dataclass
class Loaded:
    """A model the server counts with: its name here, and the model."""

    name: str
    model: Model

    @property
    def chat(self):  # the model's prompt format and counter: Model.chat
        return self.model.chat


class Models:
    """The models a server counts with: loaded once, on first use (the ``--model`` ones at start)."""

    def __init__(self, configured: Sequence[str] = ()):
        self.configured = list(dict.fromkeys(configured))  # as given: registry names, directories, Hub ids
        self.default = self.configured[0] if self.configured else None
        self._loaded: dict[str, Model] = {}
        self._lock = threading.Lock()

    def preload(self) -> None:
        """Load the ``--model`` models now; :class:`ModelError` for one that cannot be loaded."""
        for name in self.configured:
            self._load(name).count([{"role": "user", "content": "hello"}])  # the template compiled now
        if self.default is None:
            self.default = model_name()

    def _load(self, name: str) -> Model:
        with self._lock:
            model = self._loaded.get(name)
            if model is None:
                from tokprof.runs.model import get_model

                model = get_model(name)
                self._loaded[name] = model
            return model

    def known(self) -> list[str]:
        return list(dict.fromkeys(self.configured + [spec.name for spec in registered_models(plugins=True)]))

    def canonical(self, requested: str | None) -> str:
        """The name of the model that counts for a request's ``model``: the default when there is
        none; a ``--model`` name; a registered name or alias; the proxy of a closed model's name.
        Anything else is 404, with the registered model that would serve the name in a profile
        (``Qwen/Qwen3-8B``: qwen3) as a hint: a request names the model that counts. Directories and
        Hub ids are taken only as ``--model`` names: a request never makes the server read a path
        or the network."""
        if requested is None or requested == "":
            return self.default or model_name()
        if requested in self.configured:
            return requested
        try:
            return model_name(requested)
        except ModelError as exc:
            raise self._not_found(str(exc)) from None

    def _not_found(self, message: str) -> Rejected:
        known = self.known()
        return Rejected(
            404,
            "not_found_error",
            f"{message}: this server counts with {', '.join(known)}, and a "
            "closed model's name (claude-*, gpt-*) is counted by its proxy",
            "model",
            known_models=known,
        )

    def resolve(self, requested: str | None) -> Loaded:
        name = self.canonical(requested)
        try:
            return Loaded(name, self._load(name))
        except ModelError as exc:
            raise self._not_found(f"model {name!r} cannot be loaded ({exc})") from None

    def loaded(self) -> dict[str, Model]:
        with self._lock:
            return dict(self._loaded)
