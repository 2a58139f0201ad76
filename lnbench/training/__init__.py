"""Training: the one training loop, the member-axis (seed ensemble) helpers, the probes, the
synthetic data and the linear baselines."""
