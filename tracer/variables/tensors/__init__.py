"""Tensors in the graph and NumPy arrays traced through torch ops."""
