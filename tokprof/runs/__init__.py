"""The jobs a caller runs on logs, each a function: a log read and profiled, many sessions, the tools
report, what-if, budgets, a diff, a dashboard, a result rendered. The facade (:mod:`tokprof`) exports
the ones a Python user needs; the front ends call them directly."""
