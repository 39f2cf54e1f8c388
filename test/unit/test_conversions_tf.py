"""Waiting for tf in a callback: a clock that goes back is a transform tf cannot give."""
import pytest
import rospy
import tf2_ros
from geometry_msgs.msg import TransformStamped

from lost_and_found.nodes.conversions import lookup_matrix, lookup_waiting


class Buffer:
    """A tf2 buffer whose waiting lookup raises ``error`` (or gives the identity)."""

    def __init__(self, error=None):
        self.error = error
        self.calls = []

    def lookup_transform(self, target, source, stamp, timeout):
        self.calls.append((target, source, stamp, timeout))
        if self.error is not None:
            raise self.error
        stamped = TransformStamped()
        stamped.transform.rotation.w = 1.0
        return stamped


def test_a_lookup_waits_as_asked_and_gives_the_transform():
    buffer = Buffer()
    stamped = lookup_waiting(buffer, 'odom', 'camera', rospy.Time(5), 0.2)
    assert stamped.transform.rotation.w == 1.0
    assert buffer.calls == [('odom', 'camera', rospy.Time(5), rospy.Duration(0.2))]


def test_the_clock_going_back_while_waiting_is_a_lookup_error_naming_it(monkeypatch):
    buffer = Buffer(rospy.ROSTimeMovedBackwardsException(3.0))
    with pytest.raises(tf2_ros.LookupException, match='the clock went back while waiting '
                       'for odom <- camera'):
        lookup_waiting(buffer, 'odom', 'camera', rospy.Time(5), 0.2)
    warned = []
    monkeypatch.setattr(rospy, 'logwarn_throttle', lambda period, text: warned.append(text))
    assert lookup_matrix(buffer, 'odom', 'camera', rospy.Time(5), 0.2, 10.0) is None
    assert len(warned) == 1 and 'the clock went back' in warned[0]


def test_other_tf_errors_pass_through():
    buffer = Buffer(tf2_ros.ExtrapolationException('not yet'))
    with pytest.raises(tf2_ros.ExtrapolationException):
        lookup_waiting(buffer, 'odom', 'camera', rospy.Time(5), 0.2)


def test_a_frame_with_tf1s_leading_slash_is_looked_up_without_it():
    # tf2 refuses '/laser' (InvalidArgumentException); older drivers still send such frames
    buffer = Buffer()
    lookup_waiting(buffer, '/odom', '/laser', rospy.Time(5), 0.2)
    assert buffer.calls[-1][:2] == ('odom', 'laser')
