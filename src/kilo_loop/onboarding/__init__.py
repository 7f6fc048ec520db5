"""`kilo-loop init`: the first setup in a project (choices as data, the agent CLIs' login)."""
