"""Tables and figures computed from the pipeline's metrics."""
