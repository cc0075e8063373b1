"""``nn.Module``: existing modules and their guards (the module tree, parameters), and modules
made in the trace."""
