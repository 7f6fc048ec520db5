"""Per-iteration git checkpoints and the revert to one (`store`), and which deletes a checkpoint can
undo (`undoable`, asked by the guard). Nothing is imported here: the guard's hook loads `undoable`
alone."""
