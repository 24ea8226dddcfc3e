"""What more devices would buy: the collective model (collectives), the links (links), the checks against measured
cells (checks), the extension to more devices (extension) and the stage's entry (predict); each strategy's cost is
its own (strategies/cost.py). Nothing is imported here."""
