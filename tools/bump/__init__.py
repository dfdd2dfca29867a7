"""``make bump RUNNER=<runner> [VERSION=x]``: move one runner's CLI pin, re-record, diff the protocol, run its tests.

Modules: ``pins`` (where each CLI is pinned, the edits), ``shapes`` (the protocol diff: pure functions),
``snapshot`` (what a version's protocol looks like, taken from what is installed), ``main`` (the steps, the verdict).
"""
