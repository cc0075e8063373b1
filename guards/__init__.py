"""Sources, guard kinds, guard and dispatcher source generation, the variant cache."""

from . import kinds  # noqa: F401  (declares the guard kinds ``Guard`` looks up)
