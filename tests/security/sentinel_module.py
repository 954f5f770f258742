"""Imported only by the test that checks a user's own config may name a dotted type; a hostile archive naming it
must not import it (tests/security/test_archives.py checks `sys.modules`)."""


class Model:
    pass
