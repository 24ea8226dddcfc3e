"""Plain model definitions: no devices, no ranks, only ordered blocks."""
