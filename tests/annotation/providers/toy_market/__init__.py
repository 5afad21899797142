"""A toy marketplace, written the way a real one is (``docs/extending.md``, "How to add a
marketplace"): one subpackage with its ``provider`` (registered by name), its arrival page and
the marketplace's own "submit" endpoint (``views``), and its ``urls`` (mounted at
``ext/toy/``). The marketplace itself is ``MARKET``, in memory. It lives under ``tests/`` so
that production never registers it; ``test_toy_market`` registers it and mounts its URLs."""
