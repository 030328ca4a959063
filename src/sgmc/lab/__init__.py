"""The lab: the paper reproductions (``sgmc reproduce``), the benchmarks (``sgmc bench``),
the demo (``sgmc demo``), their reports and the command line. The library's core never
imports this package; it imports the core like any user's script."""
