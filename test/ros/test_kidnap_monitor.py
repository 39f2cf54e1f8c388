#!/usr/bin/env python3
"""rostest: kidnap_monitor turns Kobuki wheel drops and dock state into its three flags.

The methods run in name order and form one scenario (bump, lift-hold-put-down, dock), since the
node keeps its state between them.
"""
import threading
import time
import unittest

import rospy
import rostest
from kobuki_msgs.msg import SensorState, WheelDropEvent
from std_msgs.msg import Bool
from ros_wait import wait_for

NAME = 'test_kidnap_monitor'
FLAGS = ('picked_up', 'kidnapped', 'on_dock')


class KidnapMonitorTest(unittest.TestCase):
    """Drives /mobile_base topics and watches /kidnap_monitor/{picked_up,kidnapped,on_dock}."""

    @classmethod
    def setUpClass(cls):
        """Connect to the node and wait for its initial (False) flags."""
        rospy.init_node('test_kidnap_monitor')
        cls.lock = threading.Lock()
        cls.history = {name: [] for name in FLAGS}   # [(wall time, value), ...]
        cls.subs = [rospy.Subscriber('/kidnap_monitor/' + name, Bool, cls._record, name)
                    for name in FLAGS]
        cls.wheel_pub = rospy.Publisher('/mobile_base/events/wheel_drop', WheelDropEvent,
                                        queue_size=10)
        cls.core_pub = rospy.Publisher('/mobile_base/sensors/core', SensorState,
                                       queue_size=10)

    @classmethod
    def _record(cls, msg, name):
        with cls.lock:
            cls.history[name].append((time.time(), msg.data))

    def latest(self, name):
        """The last value received on flag ``name`` (None before any)."""
        with self.lock:
            return self.history[name][-1][1] if self.history[name] else None

    def wait_for(self, predicate, timeout, what):
        """Poll ``predicate``; fail the test if it is not true within ``timeout`` s."""
        wait_for(predicate, timeout, what)

    def hold_until(self, deadline, check=None):
        """Let the scenario run until wall time ``deadline``, checking ``check`` at 20 Hz."""
        while time.time() < deadline and not rospy.is_shutdown():
            if check is not None:
                check()
            time.sleep(0.05)

    def wheel(self, wheel, dropped):
        """Publish one WheelDropEvent."""
        self.wheel_pub.publish(WheelDropEvent(
            wheel=wheel, state=WheelDropEvent.DROPPED if dropped else WheelDropEvent.RAISED))

    def test_0_connected_and_initially_false(self):
        """The node publishes False for all three flags at start."""
        self.wait_for(lambda: all(self.latest(n) is not None for n in FLAGS), 20.0,
                      'the initial flags')
        self.wait_for(lambda: self.wheel_pub.get_num_connections() > 0
                      and self.core_pub.get_num_connections() > 0, 10.0,
                      'kidnap_monitor to subscribe')
        for name in FLAGS:
            self.assertIs(self.latest(name), False, name)

    def test_1_short_one_wheel_bump_is_not_a_pick_up(self):
        """One wheel down for 0.1 s never sets picked_up."""
        self.wheel(WheelDropEvent.LEFT, True)
        self.hold_until(time.time() + 0.1)
        self.wheel(WheelDropEvent.LEFT, False)
        # Negative check: watch for longer than the debounce and a few timer periods.
        self.hold_until(time.time() + 1.0,
                        lambda: self.assertIs(self.latest('picked_up'), False))
        with self.lock:
            self.assertEqual([v for _, v in self.history['picked_up']], [False])

    def test_2_lift_hold_put_down(self):
        """Both wheels up for 3 s: picked up, kidnapped after ~2 s, still kidnapped when down."""
        lift = time.time()
        self.wheel(WheelDropEvent.LEFT, True)
        self.wheel(WheelDropEvent.RIGHT, True)
        self.wait_for(lambda: self.latest('picked_up') is True, 2.0, 'picked_up True')
        self.wait_for(lambda: self.latest('kidnapped') is True, 4.0, 'kidnapped True')
        with self.lock:
            kidnapped_at = self.history['kidnapped'][-1][0]
        self.assertGreater(kidnapped_at - lift, 1.9, 'kidnapped reported too early')
        self.hold_until(lift + 3.0)
        self.wheel(WheelDropEvent.LEFT, False)
        self.wheel(WheelDropEvent.RIGHT, False)
        self.wait_for(lambda: self.latest('picked_up') is False, 2.0, 'picked_up False')
        self.assertIs(self.latest('kidnapped'), True, 'kidnapped must survive the put-down')

    def test_3_docking_sets_on_dock_and_clears_kidnapped(self):
        """A SensorState with charger=DOCKING_CHARGING: on_dock True, kidnapped False."""
        self.assertIs(self.latest('kidnapped'), True)
        msg = SensorState(charger=SensorState.DOCKING_CHARGING, wheel_drop=0)
        msg.header.stamp = rospy.Time.now()
        self.core_pub.publish(msg)
        self.wait_for(lambda: self.latest('on_dock') is True, 2.0, 'on_dock True')
        self.wait_for(lambda: self.latest('kidnapped') is False, 2.0, 'kidnapped False')


if __name__ == '__main__':
    rostest.rosrun('lost_and_found', NAME, KidnapMonitorTest)
