"""``torch.distributed`` in a trace: process groups, ranks and collectives as graph nodes."""
