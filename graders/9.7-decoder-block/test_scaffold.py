def test_scaffold():
    """SCAFFOLD: this kata is being written"""
    raise AssertionError("scaffold")
