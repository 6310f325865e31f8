"""One module per measure; each has `run(bench) -> Section`."""
