"""The jail (bubblewrap): the operating system keeps the loop's invariants whatever the agent runs.

`policy` (what the jail allows, as data), `bwrap` (policy → command line), `layout` (the project's
paths the policy needs), `probe` (does bubblewrap work here, cached), `jail` (the run's jail that
wraps each child), `setup` (the run's decision from `--sandbox`).
"""
