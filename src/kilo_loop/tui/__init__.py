"""`kilo-loop watch`: a terminal UI over a run's (or a fleet's) dashboard HTTP API and event stream."""
