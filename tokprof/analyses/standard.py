"""The analyses every profile carries (its tool catalogue, cost and computed cache), and the user's
prices they are priced with: one place for a single log and for every session of a directory run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Union

from tokprof.analyses.cache_forensics import attach_losses
from tokprof.analyses.carry_cost import price_carry
from tokprof.pricing.cost import PriceError, UserPrice, attach_cost, parse_price
from tokprof.analyses.prefix_cache import attach_cache
from tokprof.analyses.tools import attach_catalogue
from tokprof.pricing.billing import Rates
from tokprof.base.errors import TokprofError
from tokprof.models.base import ChatModel
from tokprof.profiling import Profile
from tokprof.trace import Trace

#: Prices the user sets, per model name ("*" for every model): ``--price`` specs, or a mapping of
#: model name to :class:`Rates` or :class:`UserPrice`.
PricesArg = Union[Sequence[str], Mapping[str, Any], None]


def user_prices(prices: PricesArg) -> dict[str, UserPrice]:
    """The user's prices by model name, from what :data:`PricesArg` allows."""
    if prices is None:
        return {}
    out: dict[str, UserPrice] = {}
    if isinstance(prices, Mapping):
        for name, value in prices.items():
            if isinstance(value, UserPrice):
                out[name] = value
            elif isinstance(value, Rates):
                out[name] = UserPrice(value, "the caller's rates")
            else:
                raise TypeError(f"prices[{name!r}]: expected Rates or UserPrice, not {type(value).__name__}")
        return out
    for spec in prices:
        try:
            name, rates = parse_price(spec)
        except PriceError as exc:
            raise TokprofError(str(exc)) from None
        out[name] = UserPrice(rates, "--price")
    return out


def attach_analyses(result: Profile, trace: Trace, chat: ChatModel | None, prices: dict[str, UserPrice]) -> Profile:
    """The analyses a profile carries: the tool catalogue (with ``chat``), the cost (and the tool results'
    carry cost in dollars), the computed cache and what its misses cost. They read the facts the pass took
    of the prompts (``Profile.facts``) and the trace's calls' other fields (a stream's light calls will
    do); the facts are let go after."""
    if chat is not None:
        result = attach_catalogue(result, trace, chat)
    result = price_carry(attach_cost(result, trace, prices))
    result = attach_losses(attach_cache(result, trace))
    result.facts = None
    return result
