"""The trackers: one package per family of values (see docs/architecture.md).

The dispatcher and the trackers import each other. Loading ``constants.constant`` first (which
loads the dispatcher once its own classes exist) gives every module that imports a tracker the
same working order, whichever tracker it names first.
"""

from .constants import constant  # noqa: F401 (import order, see above)
