"""Pricing, one feature in one folder: what a call cost and what a cache could have saved.

Its modules keep the pipeline's one-way flow, each at its stage (tests/test_layers.py): ``billing`` the
figures a profile carries (base), ``genai`` and ``table`` genai-prices' data and the table of the models
logs name (models), ``cost`` and ``spend`` the prices applied to a profile or a log's usage (analyses),
``render`` the money lines every text report writes (outputs). docs/architecture.md places it.
"""
