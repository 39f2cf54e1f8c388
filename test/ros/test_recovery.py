#!/usr/bin/env python3
"""rostest: lost_and_found saves the user's goal, spins, spirals, stops and resumes it.

This script plays lost_service (latched ``/lost_service/state``, ``/lost_service/change_state``
applying legal transitions), amcl (latched ``amcl_pose``) and the base (latched ``odom``), sends
the user's goal the way rviz does (``move_base_simple/goal``, which fake_move_base forwards to its
action like move_base), and reads what the fake move_base got from its ``~events``.
"""
import json
import math
import threading
import unittest

import rosgraph
import rospy
import rostest
from actionlib_msgs.msg import GoalID
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped, Twist
from nav_msgs.msg import Odometry
from std_msgs.msg import String

from lost_and_found.core.spiral import SpiralSearch
from lost_and_found.srv import ChangeState, ChangeStateResponse
from lost_and_found.state import State, parse_state, parse_states, transition_error
from ros_wait import wait_for

NODE = '/lost_and_found'
HOME = (1.5, -0.5, 0.4)               # the last good pose published on amcl_pose
GOAL = (4.0, 3.0, 1.0)                # the user's goal (x, y, yaw) in map
ODOM = (-2.0, 0.75)                   # where odometry says the robot is, in 'odom'


def stays(predicate, duration):
    """True when ``predicate`` holds at every 20 Hz check for ``duration`` seconds."""
    deadline = rospy.get_time() + duration
    rate = rospy.Rate(20)
    while rospy.get_time() < deadline and not rospy.is_shutdown():
        if not predicate():
            return False
        rate.sleep()
    return predicate()


def pose_msg(x, y, yaw, cls=PoseStamped):
    """A map-frame pose message of class ``cls``, stamped now."""
    msg = cls()
    msg.header.frame_id = 'map'
    msg.header.stamp = rospy.Time.now()
    pose = msg.pose.pose if cls is PoseWithCovarianceStamped else msg.pose
    pose.position.x, pose.position.y = x, y
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2.0), math.cos(yaw / 2.0)
    return msg


class RecoveryTest(unittest.TestCase):
    """The whole episode against fake_move_base, with this script as lost_service."""

    def setUp(self):
        """Play lost_service and amcl; record cmd_vel, the fake server's events, saved_goal."""
        self.lock = threading.Lock()
        self.events = []          # (receive time, event dict)
        self.twists = []          # (receive time, v, w)
        self.saved = []
        self.requests = []
        self.state = State.IDLE
        self.state_pub = rospy.Publisher('/lost_service/state', String, queue_size=1, latch=True)
        self.state_pub.publish(String(data=self.state.value))
        self.service = rospy.Service('/lost_service/change_state', ChangeState, self.on_request)
        self.amcl_pub = rospy.Publisher('amcl_pose', PoseWithCovarianceStamped, queue_size=1,
                                        latch=True)
        self.amcl_pub.publish(pose_msg(*HOME, cls=PoseWithCovarianceStamped))
        self.odom_pub = rospy.Publisher('odom', Odometry, queue_size=1, latch=True)
        odom = Odometry()
        odom.header.frame_id, odom.child_frame_id = 'odom', 'base_footprint'
        odom.header.stamp = rospy.Time.now()
        odom.pose.pose.position.x, odom.pose.pose.position.y = ODOM
        odom.pose.pose.orientation.w = 1.0
        self.odom_pub.publish(odom)
        self.goal_pub = rospy.Publisher('move_base_simple/goal', PoseStamped, queue_size=1)
        self.subs = [
            rospy.Subscriber('/move_base/events', String, self.on_event, queue_size=100),
            rospy.Subscriber('cmd_vel', Twist, self.on_twist, queue_size=100),
            rospy.Subscriber(NODE + '/saved_goal', PoseStamped, self.on_saved, queue_size=10),
        ]

    def tearDown(self):
        """Drop the subscriptions and the service."""
        for sub in self.subs:
            sub.unregister()
        self.service.shutdown()

    # ------------------------------------------------------------ recording

    def on_event(self, msg):
        with self.lock:
            self.events.append((rospy.get_time(), json.loads(msg.data)))

    def on_twist(self, msg):
        with self.lock:
            self.twists.append((rospy.get_time(), msg.linear.x, msg.angular.z))

    def on_saved(self, msg):
        with self.lock:
            self.saved.append(msg)

    def on_request(self, req):
        target = parse_state(req.state)
        expected, bad = parse_states(req.expected)
        with self.lock:
            self.requests.append((req.state, req.expected))
            if target is None or bad or transition_error(self.state, target):
                return ChangeStateResponse(False, self.state.value, 'illegal')
            if expected and self.state not in expected and target != self.state:
                return ChangeStateResponse(False, self.state.value, 'not expected')
        self.set_state(target)
        return ChangeStateResponse(True, target.value, '')

    def set_state(self, state):
        with self.lock:
            self.state = state
        self.state_pub.publish(String(data=state.value))

    def goals_from(self, callerid):
        with self.lock:
            return [(t, e) for t, e in self.events
                    if e['event'] == 'goal' and e['callerid'] == callerid]

    def has_event(self, kind, goal_id):
        with self.lock:
            return any(e['event'] == kind and e['id'] == goal_id for _, e in self.events)

    def twists_since(self, t0):
        with self.lock:
            return [(t, v, w) for t, v, w in self.twists if t >= t0]

    def node_connected(self):
        """The recovery node has subscribed to our topics and connected to move_base."""
        master = rosgraph.Master(rospy.get_name())
        pubs, subs, _ = master.getSystemState()

        def has(entries, topic):
            return any(t == topic and NODE in nodes for t, nodes in entries)
        return has(subs, '/move_base/status') and has(pubs, '/move_base/goal') and \
            self.state_pub.get_num_connections() > 0 and \
            self.amcl_pub.get_num_connections() > 0 and \
            self.odom_pub.get_num_connections() > 0 and \
            self.goal_pub.get_num_connections() >= 2

    # ------------------------------------------------------------ the scenario

    def test_episode(self):
        self.spin_speed = rospy.get_param('~spin_speed')
        self.goal_timeout = rospy.get_param('~goal_timeout')
        self.per_metre = rospy.get_param('~goal_timeout_per_metre')
        self.spiral_step = rospy.get_param('~spiral_step')
        wait_for(self.node_connected, 20.0, 'lost_and_found and fake move_base to connect')
        wait_for(lambda: all(s.get_num_connections() > 0 for s in self.subs), 10.0,
                 'our subscriptions to connect')

        # 1. The user sends a goal while IDLE: move_base gets it, the node only remembers it.
        user = pose_msg(*GOAL)
        self.goal_pub.publish(user)
        wait_for(lambda: self.goals_from('/move_base'), 5.0, 'move_base to get the user goal')
        user_id = self.goals_from('/move_base')[0][1]['id']
        wait_for(lambda: self.saved and self.saved[-1].pose.position.x == GOAL[0], 5.0,
                 '~saved_goal')
        wait_for(lambda: self.state == State.NAVIGATING, 5.0, 'the node to request NAVIGATING')
        with self.lock:
            # (the goal is seen twice, on move_base_simple/goal and move_base/goal: one
            # request or two)
            self.assertEqual(set(self.requests), {('NAVIGATING', 'IDLE')},
                             'NAVIGATING asked for while IDLE, and only then')
        self.assertEqual(self.goals_from(NODE), [], 'the node must not send the user goal')

        # 2. LOST: the user goal is cancelled, the robot spins at spin_speed.
        lost_at = rospy.get_time()
        self.set_state(State.LOST)
        wait_for(lambda: self.has_event('preempted', user_id), 5.0, 'the user goal cancelled')
        wait_for(lambda: any(abs(w - self.spin_speed) < 1e-6 and v == 0.0
                             for _, v, w in self.twists_since(lost_at)),
                 5.0, 'a spin at spin_speed on cmd_vel')

        # 3. Spiral legs in the odometry frame around where the robot is, with a spin between
        # them; the first leg (spiral_step long) is cancelled after its timeout.
        spin_time = 2.0 * math.pi / self.spin_speed
        leg_timeout = self.goal_timeout + self.per_metre * self.spiral_step
        wait_for(lambda: len(self.goals_from(NODE)) >= 2, 4.0 * (spin_time + leg_timeout),
                 'two spiral legs')
        legs = self.goals_from(NODE)[:2]
        expected = SpiralSearch(ODOM[0], ODOM[1], self.spiral_step)
        for (_, leg), (x, y, yaw) in zip(legs, (expected.next_goal(), expected.next_goal())):
            self.assertEqual(leg['frame'], 'odom')
            self.assertAlmostEqual(leg['x'], x, places=4)
            self.assertAlmostEqual(leg['y'], y, places=4)
            self.assertAlmostEqual(math.cos(leg['yaw'] - yaw), 1.0, places=4)
        self.assertGreaterEqual(legs[0][0] - lost_at, spin_time - 0.3)
        gap = legs[1][0] - legs[0][0]
        self.assertGreaterEqual(gap, leg_timeout + spin_time - 0.3)
        self.assertTrue(self.has_event('cancel', legs[0][1]['id']), 'leg 1 timed out')
        between = [w for t, _, w in self.twists_since(legs[0][0]) if t < legs[1][0]]
        self.assertTrue(any(abs(w - self.spin_speed) < 1e-6 for w in between),
                        'a spin between legs')

        # 4. Found: the search stops within a control period and the saved goal is re-sent.
        self.set_state(State.LOCALIZING)
        found_at = rospy.get_time()
        last_leg = self.goals_from(NODE)[-1][1]['id']
        wait_for(lambda: self.has_event('cancel', last_leg), 2.0, 'the last leg cancelled')
        wait_for(lambda: any(v == 0.0 and w == 0.0 for _, v, w in self.twists_since(found_at)),
                 2.0, 'a zero twist')
        self.set_state(State.IDLE)
        wait_for(lambda: any(abs(e['x'] - GOAL[0]) < 1e-6 for _, e in self.goals_from(NODE)),
                 3.0, 'the saved goal re-sent')
        resent = [e for _, e in self.goals_from(NODE) if abs(e['x'] - GOAL[0]) < 1e-6][0]
        self.assertAlmostEqual(resent['y'], GOAL[1], places=6)
        self.assertAlmostEqual(resent['yaw'], GOAL[2], places=5)
        self.assertGreater(resent['stamp'], user.header.stamp.to_sec())
        wait_for(lambda: self.state == State.NAVIGATING, 5.0, 'NAVIGATING requested again')
        with self.lock:
            self.assertEqual(self.requests[-1], ('NAVIGATING', 'IDLE'))

        # 5. No more legs, no more motion from the node.
        legs_before = len(self.goals_from(NODE))
        twists_before = len(self.twists_since(0.0))
        quiet = stays(lambda: len(self.goals_from(NODE)) == legs_before and
                      len(self.twists_since(0.0)) == twists_before,
                      leg_timeout + spin_time + 0.5)
        self.assertTrue(quiet, 'the search went on after the state left LOST')
        with self.lock:
            self.assertEqual(self.twists[-1][1:], (0.0, 0.0))

        # 6. LOST again, and the user cancels every goal on move_base/cancel (as `rostopic pub
        # /move_base/cancel actionlib_msgs/GoalID -- {}` does): move_base does not hold the
        # saved goal now, so the node forgets it, and once localized re-sends nothing. (Its
        # own cancels, of legs and of the user goal at step 2, forget nothing: step 4.)
        cancel_pub = rospy.Publisher('/move_base/cancel', GoalID, queue_size=1)
        wait_for(lambda: cancel_pub.get_num_connections() >= 2, 10.0,
                 'move_base and the node to subscribe to move_base/cancel')
        self.set_state(State.LOST)
        wait_for(lambda: self.has_event('cancel', resent['id']), 5.0,
                 'the re-sent goal cancelled')
        cancel_pub.publish(GoalID())
        wait_for(lambda: self.saved and not self.saved[-1].header.frame_id, 5.0,
                 '~saved_goal to say none')
        goals_before = len(self.goals_from(NODE))
        with self.lock:
            requests_before = len(self.requests)
        idle_at = rospy.get_time()
        self.set_state(State.IDLE)
        wait_for(lambda: any(v == 0.0 and w == 0.0 for _, v, w in self.twists_since(idle_at)),
                 3.0, 'the search stopped (a zero twist)')
        quiet = stays(lambda: not any(abs(e['x'] - GOAL[0]) < 1e-6
                                      for _, e in self.goals_from(NODE)[goals_before:]) and
                      len(self.requests) == requests_before, 2.0)
        self.assertTrue(quiet, 'the cancelled goal was re-sent, or NAVIGATING asked for')
        self.assertEqual(self.state, State.IDLE)


if __name__ == '__main__':
    rospy.init_node('recovery_tester')
    rostest.rosrun('lost_and_found', 'recovery', RecoveryTest)
