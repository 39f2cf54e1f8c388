#!/usr/bin/env python3
"""rostest: with look_before_resume, lost_and_found localized on the localizer's word alone
asks fiducial_localizer's viewpoint service, drives there, stands, then resumes the saved goal.

This script plays lost_service, amcl and the base as test_recovery.py does, and serves
``/fiducial_localizer/viewpoint``; fake_move_base succeeds the node's goals after 0.5 s and
never finishes the user's.
"""
import math
import threading

import rospy
import rostest
from std_msgs.msg import Bool

from lost_and_found.nodes.conversions import quaternion_from_yaw
from lost_and_found.srv import GetViewpoint, GetViewpointResponse
from lost_and_found.state import State
from ros_wait import wait_for
from test_recovery import GOAL, NODE, RecoveryTest, pose_msg

VIEW = (3.0, -1.0, 2.0)       # where the viewpoint service says a tag is in view


class RecoveryLookTest(RecoveryTest):
    """The look, against fake_move_base, with this script as lost_service and the viewpoint
    service."""

    def setUp(self):
        """What RecoveryTest plays, plus the viewpoint service and a latched on_dock (not
        docked)."""
        super().setUp()
        self.look_dwell = rospy.get_param('~look_dwell')
        self.asked = []
        self.asked_lock = threading.Lock()
        self.viewpoints = rospy.Service('/fiducial_localizer/viewpoint', GetViewpoint,
                                        self.on_viewpoint)
        self.dock_pub = rospy.Publisher('/kidnap_monitor/on_dock', Bool, queue_size=1,
                                        latch=True)
        self.dock_pub.publish(Bool(data=False))

    def tearDown(self):
        """Also drop the viewpoint service."""
        super().tearDown()
        self.viewpoints.shutdown()

    def on_viewpoint(self, _request):
        with self.asked_lock:
            self.asked.append(rospy.get_time())
        answer = GetViewpointResponse(found=True, fiducial_id=3, path_length=2.0,
                                      message='tag 3 in view')
        answer.pose.header.frame_id = 'map'
        answer.pose.pose.position.x, answer.pose.pose.position.y = VIEW[:2]
        answer.pose.pose.orientation = quaternion_from_yaw(VIEW[2])
        return answer

    def goals_at(self, xy):
        """The node's goals at ``xy``: [(receive time, event)]."""
        return [(t, e) for t, e in self.goals_from(NODE)
                if math.hypot(e['x'] - xy[0], e['y'] - xy[1]) < 1e-6]

    def succeeded(self, goal_id):
        """Receive time of the fake's 'succeeded' for ``goal_id``, or None."""
        with self.lock:
            return next((t for t, e in self.events
                         if e['event'] == 'succeeded' and e['id'] == goal_id), None)

    def lost_then_localized(self, user_id):
        """LOST, then, once the node has cancelled the user's goal ``user_id`` (it saw LOST),
        IDLE straight from LOST (the localizer alone); returns the time of IDLE."""
        self.set_state(State.LOST)
        wait_for(lambda: self.has_event('preempted', user_id), 5.0, 'the user goal cancelled')
        self.set_state(State.IDLE)
        return rospy.get_time()

    def test_episode(self):
        wait_for(self.node_connected, 20.0, 'lost_and_found and fake move_base to connect')
        wait_for(lambda: all(s.get_num_connections() > 0 for s in self.subs)
                 and self.dock_pub.get_num_connections() > 0, 10.0,
                 'our subscriptions and on_dock to connect')
        user = pose_msg(*GOAL)
        self.goal_pub.publish(user)
        wait_for(lambda: self.goals_from('/move_base'), 5.0, 'move_base to get the user goal')
        user_id = self.goals_from('/move_base')[0][1]['id']
        wait_for(lambda: self.state == State.NAVIGATING, 5.0, 'the node to request NAVIGATING')

        # Localized without a tag: the viewpoint is asked for and driven to, and only after
        # standing there look_dwell s is the saved goal re-sent and NAVIGATING requested.
        localized_at = self.lost_then_localized(user_id)
        wait_for(lambda: self.goals_at(VIEW), 5.0, 'the look goal at the viewpoint')
        _, look = self.goals_at(VIEW)[0]
        self.assertEqual(look['frame'], 'map')
        self.assertAlmostEqual(math.cos(look['yaw'] - VIEW[2]), 1.0, places=4)
        with self.asked_lock:
            self.assertEqual(len(self.asked), 1)
            self.assertGreaterEqual(self.asked[0], localized_at)
        wait_for(lambda: self.succeeded(look['id']) is not None, 5.0, 'the look goal reached')
        arrived = self.succeeded(look['id'])
        wait_for(lambda: self.goals_at(GOAL[:2]), self.look_dwell + 5.0, 'the saved goal')
        resent_at, _ = self.goals_at(GOAL[:2])[0]
        self.assertGreaterEqual(resent_at - arrived, self.look_dwell - 0.3)
        wait_for(lambda: self.state == State.NAVIGATING, 5.0, 'NAVIGATING requested again')


if __name__ == '__main__':
    rospy.init_node('recovery_look_tester')
    rostest.rosrun('lost_and_found', 'recovery_look', RecoveryLookTest)
