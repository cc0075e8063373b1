"""Context managers and torch's global state: the tracker family and ``with`` exits, torch's state
switches (grad mode, autocast, devices...), Python-written context managers, contexts carried
into a resume function."""
