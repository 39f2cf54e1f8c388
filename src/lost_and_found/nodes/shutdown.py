"""Callbacks that stay quiet when the node is shutting down under them."""
import functools

import rospy


def quiet_at_shutdown(callback):
    """Wrap a subscriber or timer callback so that a ``rospy.ROSException`` raised while the
    node is shutting down (``publish() to a closed topic``: roslaunch stopped the graph between
    the message's arrival and the callback's publish) ends it quietly instead of as a logged
    "bad callback" traceback. At any other time the exception goes on as before."""
    @functools.wraps(callback)
    def wrapped(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except rospy.ROSException:
            if rospy.is_shutdown():
                return None
            raise
    return wrapped
