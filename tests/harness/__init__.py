"""Test and benchmark harness, outside the runtime package: `browser` (headless Chromium driving the code explorer)
and `evalb_program` (the real EVALB program, a reference for our scorer). Shared by the tests, `benchmarks/` and
`docs/demo_pages.py`; nothing in `bitcode_allennlp/` imports it (tests/test_layout.py)."""
