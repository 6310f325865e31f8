"""One module per measure; each has `run(bench) -> Section` (fetch also returns plot points)."""
