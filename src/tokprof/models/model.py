"""A chat model as tokprof sees it: a tokenizer and a chat template."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from tokprof.models.template import ChatTemplate


@dataclass
class ChatModel:
    name: str
    tokenizer: Tokenizer
    template: ChatTemplate
    tokenizer_origin: str
    exact: bool = True

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def token_starts(self, text: str) -> np.ndarray:
        """The character offset at which each token of ``text`` starts."""
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        offsets = encoding.offsets
        if not offsets:
            return np.zeros(0, dtype=np.int64)
        return np.fromiter((start for start, _ in offsets), dtype=np.int64, count=len(offsets))

    def describe(self) -> dict:
        return {
            "name": self.name,
            "tokenizer": self.tokenizer_origin,
            "chat_template": {"origin": self.template.origin, "sha256": self.template.sha256},
            "exact": self.exact,
        }
