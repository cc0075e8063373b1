"""Calls into torch: its namespaces' functions, custom autograd Functions, higher-order
functions and scans, torch.optim's step wrappers."""
