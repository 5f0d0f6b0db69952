"""RTL mutation testing: mutants of every unit, their verdicts and the equivalence arguments."""
