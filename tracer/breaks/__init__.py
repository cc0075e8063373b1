"""The break subsystem: what the rewritten code does where a trace cannot go on, and the checks that
spare a break.

``continuation`` emits a graph break (the graph call, the state rebuilt, the breaking instruction,
the resume call), from what ``break_frames`` says each frame holds and ``liveness`` says is live;
generators live at a break are made again (``made_in_resume``) or the break is taken where they
were made (``iterator_rollback``). ``deferred_checks`` and ``speculation`` turn branches on tensor
data into checks after the graph, rerunning the call in Python on a miss.
"""
