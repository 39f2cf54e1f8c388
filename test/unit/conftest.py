"""pytest configuration of the unit tests."""
from hypothesis import settings

# The property tests check behaviour, not speed: a loaded machine (CI, a benchmark running
# beside the tests) must not fail them on hypothesis's default 200 ms deadline per example.
settings.register_profile('lost_and_found', deadline=None)
settings.load_profile('lost_and_found')
