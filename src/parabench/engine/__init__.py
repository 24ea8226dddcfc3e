"""The one training loop, evaluation, timing, checkpoints and process launch."""
