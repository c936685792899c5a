"""The household env: real ALFWorld games (TextWorld PDDL engine), generated offline."""
