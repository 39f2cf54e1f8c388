#!/usr/bin/env python3
"""rostest: a lift / hold / put-down seen through the Kobuki wheel-drop events."""
import math
import threading
import time
import unittest

import rospy
import rostest
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from kobuki_msgs.msg import WheelDropEvent
from std_msgs.msg import Bool, Empty, String

from lost_and_found.msg import LocalizationStatus
from lost_and_found.srv import ChangeState
from ros_wait import wait_for

HOME = (2.0, -1.0, 0.5)


def amcl_pose(x, y, yaw, sigma_xy, sigma_yaw):
    msg = PoseWithCovarianceStamped()
    msg.header.frame_id = 'map'
    msg.header.stamp = rospy.Time.now()
    msg.pose.pose.position.x = x
    msg.pose.pose.position.y = y
    msg.pose.pose.orientation.z = math.sin(yaw / 2)
    msg.pose.pose.orientation.w = math.cos(yaw / 2)
    cov = [0.0] * 36
    cov[0] = cov[7] = sigma_xy ** 2
    cov[35] = sigma_yaw ** 2
    msg.pose.covariance = cov
    return msg


def sender(msg):
    """The node that published a received message."""
    return msg._connection_header.get('callerid', '')


class Recorder:
    """Keeps every message of one topic, with its arrival time."""

    def __init__(self, topic, cls):
        self.messages = []
        self._lock = threading.Lock()
        rospy.Subscriber(topic, cls, self._on, queue_size=100)

    def _on(self, msg):
        with self._lock:
            self.messages.append((time.monotonic(), msg))

    def last(self):
        with self._lock:
            return self.messages[-1][1] if self.messages else None

    def all_where(self, predicate):
        with self._lock:
            return [msg for _, msg in self.messages if predicate(msg)]

    def last_where(self, predicate):
        with self._lock:
            for _, msg in reversed(self.messages):
                if predicate(msg):
                    return msg
        return None

    def first_where(self, predicate):
        with self._lock:
            for stamp, msg in self.messages:
                if predicate(msg):
                    return stamp, msg
        return None


class TestKidnap(unittest.TestCase):

    def setUp(self):
        self.state = Recorder('/lost_service/state', String)
        self.status = Recorder('/lost_service/status', LocalizationStatus)
        self.picked_up = Recorder('/kidnap_monitor/picked_up', Bool)
        self.kidnapped = Recorder('/kidnap_monitor/kidnapped', Bool)
        self.detector = Recorder('/lost_detector/status', String)
        self.good_pose = Recorder('/lost_service/last_good_pose', PoseStamped)
        self.initialpose = Recorder('/initialpose', PoseWithCovarianceStamped)
        self.resets = Recorder('/lost_detector/reset', Empty)
        self.wheels = rospy.Publisher('/mobile_base/events/wheel_drop', WheelDropEvent,
                                      queue_size=10)
        self.poses = rospy.Publisher('/amcl_pose', PoseWithCovarianceStamped, queue_size=10)
        self.fixes = rospy.Publisher('/initialpose', PoseWithCovarianceStamped, queue_size=10)
        wait_for(lambda: self.wheels.get_num_connections() > 0, 10, 'kidnap_monitor')
        wait_for(lambda: self.poses.get_num_connections() >= 2, 10, 'amcl_pose subscribers')
        wait_for(lambda: self.fixes.get_num_connections() >= 1, 10, 'initialpose subscriber')
        wait_for(lambda: self.state.last() is not None, 10, 'the latched state')

    def state_is(self, name):
        return lambda: self.state.last() is not None and self.state.last().data == name

    def wheel(self, wheel, state):
        self.wheels.publish(WheelDropEvent(wheel=wheel, state=state))

    def test_lift_hold_put_down(self):
        self.assertEqual(self.state.last().data, 'IDLE')
        # a request decided in another state is refused, as is one naming no state
        change = rospy.ServiceProxy('/lost_service/change_state', ChangeState)
        change.wait_for_service(10)
        for expected, why in (('LOST LOCALIZING', 'not LOCALIZING or LOST'),
                              ('NAVIGATING, nope', "unknown expected state 'nope'")):
            reply = change(state='NAVIGATING', reason='test', expected=expected)
            self.assertEqual((reply.accepted, reply.state), (False, 'IDLE'))
            self.assertIn(why, reply.message)
        # localized at HOME: the service remembers it as the last good pose
        self.poses.publish(amcl_pose(*HOME, sigma_xy=0.05, sigma_yaw=0.03))
        wait_for(lambda: self.good_pose.last() is not None, 5, 'last_good_pose')
        self.assertAlmostEqual(self.good_pose.last().pose.position.x, HOME[0])

        lifted = time.monotonic()
        self.wheel(WheelDropEvent.LEFT, WheelDropEvent.DROPPED)
        self.wheel(WheelDropEvent.RIGHT, WheelDropEvent.DROPPED)
        wait_for(self.state_is('FLYING'), 2, 'FLYING')
        wait_for(lambda: self.kidnapped.last() is not None and self.kidnapped.last().data, 4,
                 'kidnapped')
        became_kidnapped = self.kidnapped.first_where(lambda m: m.data)[0]
        self.assertGreaterEqual(became_kidnapped - lifted, 1.9, 'kidnapped before 2 s held')
        wait_for(lambda: self.status.last().tier == LocalizationStatus.LOST, 2, 'tier 2 held')
        # held for 3 s in all: the hold is part of the scenario, not synchronisation
        wait_for(lambda: time.monotonic() - lifted >= 3.0, 5, 'the end of the 3 s hold')

        put_down = time.monotonic()
        self.wheel(WheelDropEvent.LEFT, WheelDropEvent.RAISED)
        self.wheel(WheelDropEvent.RIGHT, WheelDropEvent.RAISED)
        wait_for(self.state_is('LOST'), 1.0, 'LOST within 1 s of put-down')
        self.assertLess(time.monotonic() - put_down, 1.0)
        wait_for(lambda: self.initialpose.last() is not None, 2, 'the re-seed')
        seed = self.initialpose.last()
        self.assertEqual(seed.header.frame_id, 'map')
        self.assertAlmostEqual(seed.pose.pose.position.x, HOME[0], places=6)
        self.assertAlmostEqual(seed.pose.pose.position.y, HOME[1], places=6)
        q = seed.pose.pose.orientation
        self.assertAlmostEqual(2 * math.atan2(q.z, q.w), HOME[2], places=6)
        cov = seed.pose.covariance
        self.assertAlmostEqual(cov[0], 0.5 ** 2, places=6)
        self.assertAlmostEqual(cov[7], 0.5 ** 2, places=6)
        self.assertAlmostEqual(cov[35], math.radians(20) ** 2, places=3)
        wait_for(lambda: self.resets.last() is not None, 2, 'the detector reset')
        status = self.status.last()
        self.assertEqual((status.tier, status.status, status.is_lost, status.kidnapped,
                          status.state), (2, 'LOCALIZATION_LOST', True, True, 'LOST'))
        self.assertFalse(self.picked_up.last().data)

        # a pose fix from someone else -> LOCALIZING; normal readings -> IDLE
        fix = amcl_pose(5.0, 5.0, 0.0, sigma_xy=0.1, sigma_yaw=0.1)
        self.fixes.publish(fix)
        sent = time.monotonic()
        wait_for(self.state_is('LOCALIZING'), 2, 'LOCALIZING')
        # The fix followed the re-seed closely (FIX_RESEND_WINDOW is 1 s of lost_service's
        # clock), so lost_service sends it again, after its re-seed, for amcl to apply last.
        # (Wall-clock gap as this test saw it; between 0.5 and 1.5 s either outcome is right.)
        reseed_arrived = self.initialpose.first_where(lambda m: sender(m) == '/lost_service')[0]
        gap = sent - reseed_arrived
        if gap < 0.5:
            wait_for(lambda: self.initialpose.last_where(
                lambda m: sender(m) == '/lost_service').pose.pose.position.x == 5.0, 2,
                'the fix sent again by lost_service')
            again = self.initialpose.last_where(lambda m: sender(m) == '/lost_service')
            self.assertEqual(again.header.stamp, fix.header.stamp)
            self.assertEqual(list(again.pose.covariance), list(fix.pose.covariance))
        count = len(self.detector.messages)
        for i in range(8):
            if self.state_is('IDLE')():
                break
            self.poses.publish(amcl_pose(5.0, 5.0, 0.0, sigma_xy=0.05, sigma_yaw=0.03))
            wait_for(lambda: len(self.detector.messages) > count + i, 2, 'a detector reading')
        wait_for(self.state_is('IDLE'), 2, 'IDLE after normal readings')
        wait_for(lambda: not self.kidnapped.last().data, 2, 'kidnapped cleared when localized')
        wait_for(lambda: self.status.last().tier == LocalizationStatus.NORMAL, 2, 'tier 0')
        # By now (8 poses later) a copy sent on and on, e.g. lost_service answering its own
        # copies, would show: one copy when the fix followed the re-seed closely, none when late.
        copies = self.initialpose.all_where(
            lambda m: sender(m) == '/lost_service' and m.pose.pose.position.x == 5.0)
        if gap < 0.5:
            self.assertEqual(len(copies), 1)
        elif gap > 1.5:
            self.assertEqual(copies, [])
        # a request decided in the state it is still in is applied
        reply = change(state='NAVIGATING', reason='test', expected='IDLE NAVIGATING')
        self.assertEqual((reply.accepted, reply.state, reply.message), (True, 'NAVIGATING', ''))


if __name__ == '__main__':
    rospy.init_node('test_lost_service')
    rostest.rosrun('lost_and_found', 'lost_service_kidnap', TestKidnap)
