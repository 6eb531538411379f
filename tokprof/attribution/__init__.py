"""The attribution layer: every token of a rendered prompt to its bucket (``attributor``), the
estimates that make a closed model's buckets agree with what was billed (``estimates``), what each
tool result and each tool definition costs over a run (``tool_results``, ``catalogue``)."""
