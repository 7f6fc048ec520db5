"""`kilo-loop doctor`: is this machine ready to run the loop (checks pure, probe does the I/O)."""
