"""Analysis (pure functions of rows): statistics, verdicts, aggregates, the grid's and the claims' logic."""
