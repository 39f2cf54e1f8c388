"""Waiting for a condition in a rostest, with a deadline instead of a sleep."""
import time
import xmlrpc.client

import rosgraph
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


def publishes_to(node, topic, subscriber=None):
    """Whether ``node`` has ``subscriber``'s (default: this node's) subscription to ``topic``
    among the connections it publishes on.

    A subscriber counts a connection (``get_num_connections``) once the publisher's reply
    header arrives; the publisher adds the connection to its own list only after sending it
    (rospy's TCPROS handler), and a message published in between is lost to the subscriber.
    In CI runs the two sides were 1 s apart, once on a topic of events that are never repeated
    and once on /clock (a node without sim time yet timed a 3 s lift as 0 s). This asks the
    publishing node itself (its ``getBusInfo`` slave API call).
    """
    me = rospy.get_name()
    subscriber = subscriber or me
    try:
        uri = rosgraph.Master(me).lookupNode(node)
        code, _, info = xmlrpc.client.ServerProxy(uri).getBusInfo(me)
    except (OSError, rosgraph.MasterException, xmlrpc.client.Error):
        return False        # not registered or not answering yet: ask again
    return code == 1 and any(len(c) > 4 and c[1] == subscriber and c[2] == 'o' and
                             c[4] == topic for c in info)
