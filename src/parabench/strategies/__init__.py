"""The strategies, one module each; registry.STRATEGIES names them. Nothing is imported here (registry.py says why)."""
