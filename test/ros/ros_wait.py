"""Waiting for a condition in a rostest, with a deadline instead of a sleep."""
import time

import rospy


def wait_for(predicate, timeout, what, period=0.05):
    """Poll ``predicate`` until it holds; raise AssertionError after ``timeout`` wall seconds.

    Args:
        predicate: callable returning a truth value.
        timeout: wall seconds to wait (rostest time limits are wall time too).
        what: what is awaited, for the failure message.
        period: seconds between polls.
    """
    deadline = time.monotonic() + timeout
    while not rospy.is_shutdown() and time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(period)
    raise AssertionError('timed out after %.1f s (wall) waiting for %s' % (timeout, what))
