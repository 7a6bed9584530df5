"""Metrics for Prometheus, one folder: ``prometheus`` (one process's, in a
``prometheus_client`` registry), ``shared`` (every worker of a server's,
counted in files: ``files``), ``families`` (what a scrape says) and
``tally`` (counting without a lock). Needs the ``metrics`` extra."""
