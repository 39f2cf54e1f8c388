#!/usr/bin/env python3
"""End-to-end rostests: the simulator, the whole package, a scripted user and a kidnapper.

One script, five scenarios (the ``~scenario`` parameter, set by each e2e_*.test):

- ``lift_kidnap``: while driving to G, lifted 3 s and put down >= 5 m away -> LOST within 1 s
  (sim) of the put-down; recovered (estimate within 0.45 m / 0.35 rad of the truth for 10 s);
  G reached: the robot stopped within 0.4 m of it when the errand ended.
- ``silent_bringup``: the robot is moved silently >= 3 m before it starts driving, so the
  localizer starts from a wrong pose; it drives to G (then on to the map's goals while
  move_base ends each before the detector decided) -> /lost_detector/status reaches lost,
  global localization is called, recovered.
- ``no_false_alarm``: ``~drive_time`` sim seconds of driving between the map's goals -> the
  lost detector never reaches tier 2 and lost_service never leaves IDLE / NAVIGATING.
- ``need_help``: a search budget too short to succeed -> NEED_HELP, the base stops, the saved
  goal is still held.
- ``reactive``: no move_base running; a lift kidnap still ends recovered.

Scenario poses come from the map's ``scenario`` parameters (maps/<map>_sim.yaml).
"""
import math
import threading
import unittest

import rosgraph
import rospy
import rostest
from actionlib_msgs.msg import GoalStatus
from geometry_msgs.msg import Pose2D
from kobuki_msgs.msg import SensorState
from move_base_msgs.msg import MoveBaseAction
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Log
from std_msgs.msg import String

from e2e_util import Monitor, wait_for
from lost_and_found.bench.recovery import GOAL_REACHED
from lost_and_found.nodes.goal_client import GoalClient
from lost_and_found.nodes.lost_and_found import move_base_goal_from_leg
from lost_and_found.srv import Kidnap, Teleport
from ros_wait import publishes_to

#: Terminal states of a move_base goal.
GOAL_ENDED = (GoalStatus.SUCCEEDED, GoalStatus.ABORTED, GoalStatus.REJECTED,
              GoalStatus.PREEMPTED, GoalStatus.RECALLED, GoalStatus.LOST)


def goal_message(pose):
    """A MoveBaseGoal at ``pose`` (x, y, yaw) in the map frame, stamped now."""
    return move_base_goal_from_leg(pose, 'map', rospy.Time.now())


def rosout_publishers():
    """The other nodes that publish /rosout (every node of the graph, once registered)."""
    publishers, _, _ = rosgraph.Master(rospy.get_name()).getSystemState()
    nodes = next((names for topic, names in publishers if topic == '/rosout'), [])
    return [name for name in nodes if name != rospy.get_name()]


class TestEndToEnd(unittest.TestCase):
    """Drives the simulated TurtleBot2 through one scenario."""

    def setUp(self):
        self.scenario = rospy.get_param('~scenario')
        # the map's scenario (maps/<map>_sim.yaml), with this test's private overrides
        self.params = dict(rospy.get_param('/scenario'))
        self.params.update(rospy.get_param('~overrides', {}))
        self.monitor = Monitor()
        self.lock = threading.Lock()
        self.in_air_until = None    # stamp of the latest SensorState with a wheel dropped
        self.landings = []          # that stamp, for each time both wheels came down again
        self.kidnap_requested_at = 0.0
        self.logs = []
        self.detector_seen = set()
        sensor_state = rospy.Subscriber('/mobile_base/sensors/core', SensorState,
                                        self._on_sensor_state, queue_size=50)
        rosout = rospy.Subscriber('/rosout', Log, self._on_log, queue_size=1000)
        rospy.Subscriber('/lost_detector/status', String, self._on_detector, queue_size=100)
        wait_for(lambda: rospy.get_time() > 0, 60, '/clock')
        wait_for(lambda: self.monitor.truth is not None, 60, 'the ground truth')
        wait_for(lambda: self.monitor.state() == 'IDLE', 60, 'lost_service IDLE')
        # ~status is latched: a late connection would bring only its newest status
        wait_for(lambda: getattr(self.monitor.last_status(), 'state', None) == 'IDLE', 60,
                 'lost_service status IDLE')
        wait_for(lambda: self.monitor.estimate() is not None, 60, 'tf map -> base_footprint')
        # a kidnap right after setUp must not race the connections that time it: this node's
        # sensor state (the put-down) and kidnap_monitor's wheel drops and clock (the hold),
        # asked of sim_world, since a subscriber counts a connection earlier
        wait_for(lambda: sensor_state.get_num_connections() > 0 and publishes_to(
            '/sim_world', '/mobile_base/sensors/core'), 60,
            'sim_world to publish /mobile_base/sensors/core to this node')
        wait_for(lambda: all(publishes_to('/sim_world', topic, '/kidnap_monitor') for topic in (
            '/clock', '/mobile_base/events/wheel_drop')), 60,
            'sim_world to publish /clock and the wheel drops to kidnap_monitor')

        # /rosout is not latched: a node's message before it has our connection is lost (the
        # silent bring-up reads lost_service's call of global localization there); asked of
        # each publishing node, since this side counts a connection earlier
        def every_rosout_reaches_me():
            nodes = rosout_publishers()
            return rosout.get_num_connections() >= len(nodes) and all(
                publishes_to(node, '/rosout') for node in nodes)
        wait_for(every_rosout_reaches_me, 60, 'every node to publish its /rosout to this node')

    def _on_sensor_state(self, msg):
        # The put-down lies between the last stamp with a wheel dropped and the first with both
        # down; the earlier one is taken, so a delay measured from it is never too short.
        with self.lock:
            if msg.wheel_drop:
                self.in_air_until = msg.header.stamp.to_sec()
            elif self.in_air_until is not None:
                self.landings.append(self.in_air_until)
                self.in_air_until = None

    def _on_log(self, msg):
        with self.lock:
            self.logs.append((msg.name, msg.msg))

    def _on_detector(self, msg):
        self.detector_seen.add(msg.data)

    def logged(self, node, fragment):
        with self.lock:
            return any(name == node and fragment in text for name, text in self.logs)

    # -- building blocks ---------------------------------------------------------------------

    def action_client(self):
        """A move_base client whose goals both move_base and lost_and_found will hear."""
        client = GoalClient('move_base', MoveBaseAction)
        self.assertTrue(client.wait_for_server(rospy.Duration(30.0)), 'move_base is not up')
        # The user's goal must reach the recovery node too, or it has nothing to resume.
        wait_for(lambda: client.action_client.pub_goal.get_num_connections() >= 2, 30,
                 'move_base/goal subscribers (move_base and lost_and_found)')
        return client

    def send_goal(self, pose):
        client = self.action_client()
        client.send_goal(goal_message(pose))
        return client

    def kidnap(self, pose, hold=3.0):
        """Lift, hold, carry and put down; returns (lift pose, put-down pose, put-down time).

        The put-down time is a sim-time stamp of the base's own SensorState, so it does not
        depend on when this test happened to receive the message.
        """
        rospy.wait_for_service('/sim_world/kidnap', timeout=30.0)
        self.kidnap_requested_at = rospy.get_time()
        lifted_at = self.monitor.truth
        with self.lock:
            landings_before = len(self.landings)
        reply = rospy.ServiceProxy('/sim_world/kidnap', Kidnap)(
            pose=Pose2D(*pose), random=False, min_distance=0.0, hold=hold)
        self.assertTrue(reply.success, reply.message)

        def put_down():
            with self.lock:
                return len(self.landings) > landings_before
        wait_for(put_down, 60, 'SensorState with both wheels on the ground again (the put-down)')
        with self.lock:
            put_down_at = self.landings[landings_before]
        return lifted_at, (reply.pose.x, reply.pose.y, reply.pose.theta), put_down_at

    def assert_lost_soon_after(self, put_down_at):
        # put_down_at is the last SensorState stamp in the air, up to one message period
        # (0.1 s) before the wheels touched down: the delay measured from it is never shorter
        # than the true one, so the 1 s allowance is checked strictly.
        def lost_at():
            return self.monitor.entered_state_stamp('LOST', after=self.kidnap_requested_at)
        wait_for(lambda: lost_at() is not None, 30, 'LOST after the put-down')
        delay = lost_at() - put_down_at
        self.assertLessEqual(delay, 1.0, 'LOST %.2f s (sim) after the put-down' % delay)

    def wait_goal_reached(self, pose, timeout):
        """The robot comes within GOAL_REACHED of ``pose``, the package ends the errand
        (IDLE), and the robot has stopped within GOAL_REACHED of it.

        GOAL_REACHED (0.4 m, the recovery benchmark's) is the navigator's xy_tolerance
        (0.2 m) plus 0.2 m for the estimate's error: this scenario's stops measured
        0.25-0.32 m (bench/RESULTS.md, "Leaving the turn for a distant tag"), against a
        check of 0.3 m before.
        """
        closest = [math.inf]

        def goal_distance():
            return self.monitor.truth_distance(pose[0], pose[1])

        def near():
            distance = goal_distance()
            if distance is not None:
                closest[0] = min(closest[0], distance)
            return distance is not None and distance <= GOAL_REACHED
        try:
            wait_for(near, timeout, 'the robot at its goal (%.2f, %.2f)' % (pose[0], pose[1]),
                     period=0.2)
        except AssertionError as failure:
            raise AssertionError('%s; closest %.2f m, now %.2f m, state %s' % (
                failure, closest[0], goal_distance(), self.monitor.state())) from None
        wait_for(lambda: self.monitor.state() == 'IDLE', 30, 'the package IDLE at the goal')
        stop, error = goal_distance(), self.monitor.error()
        rospy.loginfo('e2e: the errand ended %.3f m from its goal (the estimate %s m off the '
                      'truth)', stop, '?' if error is None else '%.3f' % error[0])
        self.assertLessEqual(stop, GOAL_REACHED, 'the robot stopped %.2f m from its goal' % stop)

    def wait_travelled(self, start, distance, timeout):
        def far_enough():
            truth = self.monitor.truth
            return math.hypot(truth[0] - start[0], truth[1] - start[1]) >= distance
        wait_for(far_enough, timeout, 'the robot to drive %.1f m' % distance, period=0.2)

    # -- scenarios -------------------------------------------------------------------------

    def test_scenario(self):
        getattr(self, 'run_' + self.scenario)()

    def run_lift_kidnap(self):
        goal = self.params['goal']
        start = self.monitor.truth
        self.send_goal(goal)
        self.wait_travelled(start, 0.5 * math.hypot(goal[0] - start[0], goal[1] - start[1]),
                            180)
        lifted, put, put_down_at = self.kidnap(self.params['kidnap_pose'])
        self.assertGreaterEqual(math.hypot(put[0] - lifted[0], put[1] - lifted[1]), 5.0)
        self.assert_lost_soon_after(put_down_at)
        self.monitor.wait_recovered(timeout=300)
        self.wait_goal_reached(goal, timeout=300)

    def run_silent_bringup(self):
        start = self.monitor.truth
        wrong = self.params['silent_pose']
        self.assertGreaterEqual(math.hypot(wrong[0] - start[0], wrong[1] - start[1]), 3.0)
        rospy.wait_for_service('/sim_world/teleport', timeout=30.0)
        self.assertTrue(rospy.ServiceProxy('/sim_world/teleport', Teleport)(
            pose=Pose2D(*wrong)).success)
        # amcl publishes only while the robot moves, so a mislocalized robot that move_base has
        # given up on and parked gives the detector nothing to judge (README, known
        # limitations); and where the wrong pose's scan half fits (the office's rooms look
        # alike) the detector needs views from more places. As its user would, send the robot
        # on to the next goal whenever move_base ends one.
        deadline = rospy.get_time() + 1500.0          # sim s: at most ~5 min wall at 5x
        for goal in [self.params['goal']] + list(self.params['goals']):
            client = self.send_goal(goal)
            wait_for(lambda: 'lost' in self.detector_seen or
                     client.get_state() in GOAL_ENDED or rospy.get_time() > deadline, 300,
                     '/lost_detector/status lost (or move_base ending the goal)')
            if 'lost' in self.detector_seen or rospy.get_time() > deadline:
                break
        self.assertIn('lost', self.detector_seen,
                      'no tier 2 while driving to the scenario\'s goals on a wrong pose')
        wait_for(lambda: self.logged('/lost_service', 'global_localization'), 30,
                 'lost_service to call global_localization')
        self.monitor.wait_recovered(timeout=400)

    def run_no_false_alarm(self):
        goals = self.params['goals']
        drive_time = rospy.get_param('~drive_time', 600.0)
        began = rospy.get_time()
        visited = 0
        client = self.action_client()
        while rospy.get_time() - began < drive_time:
            goal = goals[visited % len(goals)]
            client.send_goal(goal_message(goal))
            wait_for(lambda: client.wait_for_result(rospy.Duration(0.1)) or
                     rospy.get_time() - began >= drive_time, 900, 'goal %d' % visited)
            visited += 1
            self.assertNotIn('lost', self.detector_seen,
                             'a false tier-2 alarm while driving normally')
        self.assertGreaterEqual(visited, 3, 'the robot hardly drove')
        self.assertNotIn('lost', self.detector_seen)
        with self.monitor.lock:
            states = {state for _, state in self.monitor.states}
        self.assertLessEqual(states, {'IDLE', 'NAVIGATING'}, 'states seen: %s' % states)

    def _on_odometry(self, msg):
        self.odometry = (msg.header.stamp.to_sec(), msg.twist.twist.linear.x,
                         msg.twist.twist.angular.z)

    def run_need_help(self):
        self.odometry = None    # (stamp, linear, angular speed) of the newest /odom
        rospy.Subscriber('/odom', Odometry, self._on_odometry, queue_size=1)
        goal = self.params['goal']
        start = self.monitor.truth
        self.send_goal(goal)
        self.wait_travelled(start, 2.0, 180)
        _, _, put_down_at = self.kidnap(self.params['kidnap_pose'])
        self.assert_lost_soon_after(put_down_at)
        wait_for(lambda: self.monitor.state() == 'NEED_HELP', 300, 'NEED_HELP')
        # ~state and ~status are two topics: wait for the status to catch up, then check it
        wait_for(lambda: self.monitor.last_status().tier == 3, 10, 'status tier 3')
        status = self.monitor.last_status()
        self.assertEqual((status.status, status.state), ('LOCALIZATION_NEED_HELP', 'NEED_HELP'))
        # the base stops: the odometry reads no motion within 2 s of sim time (NEED_HELP may
        # come while it still brakes from a search leg), then the truth stays put for 5 s
        help_at = self.monitor.entered_state_stamp('NEED_HELP', put_down_at)
        self.assertIsNotNone(help_at, 'no status stamped with the entry into NEED_HELP')
        wait_for(lambda: self.odometry is not None and self.odometry[0] > help_at, 10,
                 'odometry after NEED_HELP')
        wait_for(lambda: abs(self.odometry[1]) < 1e-3 and abs(self.odometry[2]) < 1e-3, 60,
                 'the base to come to rest')
        rest_at = self.odometry[0]
        self.assertLess(rest_at - help_at, 2.0, 'the base came to rest %.1f s after NEED_HELP'
                        % (rest_at - help_at))
        first, window_began = self.monitor.truth, rospy.get_time()
        wait_for(lambda: rospy.get_time() - window_began >= 5.0, 60, '5 s of sim time')
        moved = math.hypot(self.monitor.truth[0] - first[0], self.monitor.truth[1] - first[1])
        self.assertLess(moved, 0.01, 'the base moved %.3f m while NEED_HELP' % moved)
        saved = self.monitor.saved_goal
        self.assertIsNotNone(saved, 'the saved goal was dropped')
        self.assertAlmostEqual(saved.pose.position.x, goal[0], places=3)
        self.assertAlmostEqual(saved.pose.position.y, goal[1], places=3)

    def run_reactive(self):
        _, _, put_down_at = self.kidnap(self.params['kidnap_pose'])
        self.assert_lost_soon_after(put_down_at)
        self.monitor.wait_recovered(timeout=400)


if __name__ == '__main__':
    rospy.init_node('test_e2e')
    rostest.rosrun('lost_and_found', 'e2e', TestEndToEnd)
