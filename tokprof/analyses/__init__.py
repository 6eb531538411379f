"""Analyses that build on traces and profiles: what each tool costs, budgets, what-ifs."""
