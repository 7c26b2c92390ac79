"""Contract-test mixins, one per port in `rag_core/ports.py` (as haystack's `testing/`).

A mixin is a class of test methods that need one fixture, the adapter under test; a test module
subclasses it once per adapter (and once for a fake). An adapter is correct when it passes its mixin.
"""
