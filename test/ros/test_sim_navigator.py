#!/usr/bin/env python3
"""rostest: sim_navigator drives a tiny kinematic robot to goals like move_base would.

This script is the whole simulator: it publishes /clock (``~speed`` sim seconds per wall
second), integrates the ``cmd_vel`` it receives (ideal differential drive, the last command
held like a base without a watchdog: a missing zero twist would show) into tf
``map -> odom -> base_footprint`` (map -> odom the identity), and publishes scans in
``base_footprint``: empty, one return 0.3 m straight ahead for the obstacle test, or a post
at a fixed place that a Kinect-like laser reads as ``-inf`` once it is nearer than 0.45 m.
Goals go through an actionlib client, or ``move_base_simple/goal``.
"""
import math
import threading
import time
import unittest

import actionlib
import rospy
import rostest
import tf2_ros
from actionlib_msgs.msg import GoalStatus
from geometry_msgs.msg import PoseStamped, TransformStamped, Twist
from move_base_msgs.msg import MoveBaseAction, MoveBaseActionResult, MoveBaseGoal
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import LaserScan
from std_srvs.srv import Empty

from lost_and_found.core.geometry import wrap_angle as wrap
from lost_and_found.sim.gridmap import load_map
from ros_wait import wait_for

#: Wall seconds between two simulation ticks.
TICK = 0.01

#: The post test's laser sees nothing nearer than this (m), like a Kinect.
POST_RANGE_MIN = 0.45

TERMINAL = (GoalStatus.PREEMPTED, GoalStatus.SUCCEEDED, GoalStatus.ABORTED,
            GoalStatus.REJECTED, GoalStatus.RECALLED, GoalStatus.LOST)


def stays(predicate, duration):
    """True when ``predicate`` holds at every 20 Hz check for ``duration`` wall seconds."""
    deadline = time.monotonic() + duration
    event = threading.Event()
    while time.monotonic() < deadline and not rospy.is_shutdown():
        if not predicate():
            return False
        event.wait(0.05)
    return predicate()


class KinematicRobot:
    """The test's simulator: clock, tf from integrated cmd_vel, and scans."""

    def __init__(self, start, speed):
        """Start ticking at ``speed`` x real time with the robot at ``start`` (x, y, yaw)."""
        self.lock = threading.Lock()
        self.pose = tuple(start)
        self.command = (0.0, 0.0)
        self.twists = []            # (sim time, v, w) of every cmd_vel received
        self.obstacle = False
        self.obstacle_since = None  # sim time of the first scan with the obstacle
        self.post = None            # (x, y) of a post in the map, or None
        self.now = 1.0              # sim seconds; 0 would mean "no time yet" to rospy
        self.speed = speed
        self.clock_pub = rospy.Publisher('/clock', Clock, queue_size=1)
        self.scan_pub = rospy.Publisher('scan', LaserScan, queue_size=1)
        self.tf = tf2_ros.TransformBroadcaster()
        rospy.Subscriber('cmd_vel', Twist, self.on_cmd, queue_size=100)
        self._scan_due = 0.0
        threading.Thread(target=self.run, daemon=True).start()

    def on_cmd(self, msg):
        """Hold the latest command until the next one."""
        with self.lock:
            self.command = (msg.linear.x, msg.angular.z)
            self.twists.append((self.now, msg.linear.x, msg.angular.z))

    def teleport(self, pose):
        """Put the robot at ``pose``, standing still."""
        with self.lock:
            self.pose = tuple(pose)
            self.command = (0.0, 0.0)

    def run(self):
        """Tick: advance the clock, integrate the held command, publish clock, tf and scans."""
        event = threading.Event()
        while not rospy.is_shutdown():
            event.wait(TICK)        # pacing of the simulated clock, not synchronisation
            with self.lock:
                dt = TICK * self.speed
                x, y, yaw = self.pose
                v, w = self.command
                self.pose = (x + v * dt * math.cos(yaw + 0.5 * w * dt),
                             y + v * dt * math.sin(yaw + 0.5 * w * dt), wrap(yaw + w * dt))
                self.now += dt
                now, pose, obstacle, post = self.now, self.pose, self.obstacle, self.post
            stamp = rospy.Time.from_sec(now)
            try:
                self.clock_pub.publish(Clock(clock=stamp))
                self.tf.sendTransform([self.transform('map', 'odom', (0.0, 0.0, 0.0), stamp),
                                       self.transform('odom', 'base_footprint', pose, stamp)])
                if now >= self._scan_due:
                    self._scan_due = now + 0.1
                    if obstacle and self.obstacle_since is None:
                        self.obstacle_since = now
                    self.scan_pub.publish(self.scan(obstacle, stamp, pose, post))
            except rospy.ROSException:
                return

    @staticmethod
    def transform(parent, child, pose, stamp):
        """tf ``parent`` -> ``child`` at ``pose``."""
        msg = TransformStamped()
        msg.header.frame_id, msg.header.stamp = parent, stamp
        msg.child_frame_id = child
        msg.transform.translation.x, msg.transform.translation.y = pose[0], pose[1]
        msg.transform.rotation.z = math.sin(pose[2] / 2.0)
        msg.transform.rotation.w = math.cos(pose[2] / 2.0)
        return msg

    @staticmethod
    def scan(obstacle, stamp, pose, post):
        """A scan in base_footprint: no returns, one 0.3 m straight ahead, or the post (in the
        beam whose cone holds it; ``-inf`` nearer than 0.45 m, as a Kinect reads it)."""
        msg = LaserScan()
        msg.header.frame_id, msg.header.stamp = 'base_footprint', stamp
        msg.angle_min, msg.angle_max, msg.angle_increment = -0.1, 0.1, 0.1
        msg.range_min, msg.range_max = 0.05, 10.0
        msg.ranges = [math.inf, 0.3 if obstacle else math.inf, math.inf]
        if post is not None:
            msg.range_min = POST_RANGE_MIN
            distance = math.hypot(post[0] - pose[0], post[1] - pose[1])
            bearing = wrap(math.atan2(post[1] - pose[1], post[0] - pose[0]) - pose[2])
            beam = int(round((bearing - msg.angle_min) / msg.angle_increment))
            if 0 <= beam < len(msg.ranges):
                msg.ranges[beam] = distance if distance >= msg.range_min else -math.inf
        return msg

    def state(self):
        """(pose, number of twists, last twist) under the lock."""
        with self.lock:
            return self.pose, len(self.twists), (self.twists[-1] if self.twists else None)


def pose_stamped(x, y, yaw, frame='map'):
    """A geometry_msgs/PoseStamped."""
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.header.stamp = rospy.Time.now()
    msg.pose.position.x, msg.pose.position.y = x, y
    msg.pose.orientation.z, msg.pose.orientation.w = math.sin(yaw / 2.0), math.cos(yaw / 2.0)
    return msg


class SimNavigatorTest(unittest.TestCase):
    """move_base's contract against the kinematic robot."""

    robot = None
    client = None

    @classmethod
    def setUpClass(cls):
        """Start the robot and connect to the move_base action."""
        cls.start = tuple(rospy.get_param('~start'))
        cls.goal = tuple(rospy.get_param('~goal'))
        cls.wall_goal = tuple(rospy.get_param('~wall_goal'))
        cls.post_goal = tuple(rospy.get_param('~post_goal'))
        grid = load_map(rospy.get_param('~map_file'))
        # The fixtures must fit the map: fail here, clearly, if the map changed.
        assert grid.distance_at(*cls.start[:2]) >= 0.3, 'start %r too near a wall' % (cls.start,)
        assert grid.distance_at(*cls.goal[:2]) >= 0.3, 'goal %r too near a wall' % (cls.goal,)
        assert grid.distance_at(*cls.post_goal[:2]) >= 0.3, \
            'post_goal %r too near a wall' % (cls.post_goal,)
        assert grid.is_occupied(*cls.wall_goal), 'wall_goal %r is not a wall' % (cls.wall_goal,)
        cls.robot = KinematicRobot(cls.start, rospy.get_param('~speed'))
        cls.tf = tf2_ros.Buffer()
        cls.tf_listener = tf2_ros.TransformListener(cls.tf)
        cls.client = actionlib.SimpleActionClient('move_base', MoveBaseAction)
        wait_for(lambda: cls.client.wait_for_server(rospy.Duration(0.2)), 30.0,
                 'the move_base action server')

    def setUp(self):
        """Every test starts from the start pose, with a clear scan."""
        self.robot.obstacle = False
        self.robot.obstacle_since = None
        self.robot.post = None
        self.robot.teleport(self.start)
        self.feedback = []
        # The navigator must see the robot at the start before a goal is sent: wait for tf.
        wait_for(self.tf_at_start, 10.0, 'tf map -> base_footprint at the start pose')

    def tf_at_start(self):
        """True when the latest tf map -> base_footprint is the start pose."""
        try:
            t = self.tf.lookup_transform('map', 'base_footprint', rospy.Time(0)).transform
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException):
            return False
        return math.hypot(t.translation.x - self.start[0],
                          t.translation.y - self.start[1]) < 1e-6

    def tearDown(self):
        """Leave no goal running (a failed test must not spoil the next one)."""
        # Cancel every goal stamped up to now (also those sent on move_base_simple/goal), but
        # not the next test's: a cancel-all that reached the server after the next goal would
        # preempt it. The next goal is stamped later once the clock has moved on.
        now = rospy.Time.now()
        self.client.cancel_goals_at_and_before_time(now)
        wait_for(lambda: rospy.Time.now() > now, 10.0, 'the clock to move on')
        wait_for(lambda: self.robot.state()[2] is None or
                 self.robot.state()[2][1:] == (0.0, 0.0), 10.0, 'the robot to stop')

    def send(self, x, y, yaw):
        """Send a goal through the action client; feedback is recorded."""
        goal = MoveBaseGoal(target_pose=pose_stamped(x, y, yaw))
        self.client.send_goal(goal, feedback_cb=self.feedback.append)

    def wait_terminal(self, timeout):
        """Wait until the client's goal has ended; return its status."""
        wait_for(lambda: self.client.get_state() in TERMINAL, timeout, 'the goal to end')
        return self.client.get_state()

    def assert_stopped_and_silent(self):
        """The last twist is zero, and no twist follows while idle."""
        wait_for(lambda: self.robot.state()[2] is not None and
                 self.robot.state()[2][1:] == (0.0, 0.0), 5.0, 'a zero twist')
        count = self.robot.state()[1]
        self.assertTrue(stays(lambda: self.robot.state()[1] == count, 1.0),
                        'cmd_vel published while idle')

    def test_goal_succeeds_near_the_goal(self):
        """A reachable goal: SUCCEEDED with the robot within the tolerances, then silence."""
        self.send(*self.goal)
        status = self.wait_terminal(40.0)
        self.assertEqual(status, GoalStatus.SUCCEEDED, self.client.get_goal_status_text())
        pose = self.robot.state()[0]
        self.assertLess(math.hypot(pose[0] - self.goal[0], pose[1] - self.goal[1]), 0.25)
        self.assertLess(abs(wrap(pose[2] - self.goal[2])), 0.35)
        self.assertTrue(self.feedback)
        last = self.feedback[-1].base_position
        self.assertEqual(last.header.frame_id, 'map')
        self.assertLess(math.hypot(last.pose.position.x - self.goal[0],
                                   last.pose.position.y - self.goal[1]), 0.5)
        speeds = [v for _, v, _ in self.robot.twists]
        self.assertLessEqual(max(speeds), 0.3 + 1e-6)
        self.assert_stopped_and_silent()

    def test_goal_inside_a_wall_is_aborted(self):
        """No path: ABORTED, and the robot does not move."""
        self.send(self.wall_goal[0], self.wall_goal[1], 0.0)
        status = self.wait_terminal(20.0)
        self.assertEqual(status, GoalStatus.ABORTED)
        self.assertIn('no path', self.client.get_goal_status_text())
        pose = self.robot.state()[0]
        self.assertLess(math.hypot(pose[0] - self.start[0], pose[1] - self.start[1]), 0.01)
        self.assert_stopped_and_silent()

    def test_cancel_preempts_and_stops(self):
        """A cancel mid-way: PREEMPTED and one zero twist; the robot stays put."""
        # Only twists received after the goal count: the previous test's last ones may be fast,
        # and a cancel sent before the server has the goal would recall it, not preempt it.
        sent = len(self.robot.twists)
        self.send(*self.goal)
        wait_for(lambda: self.client.get_state() == GoalStatus.ACTIVE, 20.0, 'the goal to start')
        wait_for(lambda: any(v > 0.1 for _, v, _ in self.robot.twists[sent:]), 20.0,
                 'the robot to drive')
        self.client.cancel_goal()
        status = self.wait_terminal(10.0)
        self.assertEqual(status, GoalStatus.PREEMPTED)
        self.assert_stopped_and_silent()
        pose = self.robot.state()[0]
        self.assertTrue(stays(lambda: self.robot.state()[0] == pose, 0.5))

    def test_obstacle_in_the_scan_stops_forward_motion(self):
        """A return 0.3 m ahead: no forward motion until it is gone, then the goal is reached."""
        self.robot.obstacle = True
        wait_for(lambda: self.robot.obstacle_since is not None, 5.0, 'a scan with the obstacle')
        # Allow the navigator one control period to receive that scan.
        seen = self.robot.obstacle_since + 0.15
        self.send(*self.goal)
        wait_for(lambda: sum(t > seen for t, _, _ in self.robot.twists) >= 20, 20.0,
                 '20 twists with the obstacle in view')
        self.assertEqual([v for t, v, _ in self.robot.twists if t > seen and v != 0.0], [])
        pose = self.robot.state()[0]
        self.assertLess(math.hypot(pose[0] - self.start[0], pose[1] - self.start[1]), 0.05)
        self.robot.obstacle = False
        self.assertEqual(self.wait_terminal(40.0), GoalStatus.SUCCEEDED)

    def stop_at_a_blinded_post(self):
        """Put a post 1 m straight ahead of the start (on the straight way to post_goal), send
        post_goal, and wait until the post is nearer than the Kinect measures (it reads
        ``-inf``) and the robot has sent 20 twists without forward motion. Returns the
        function giving the robot's distance to the post."""
        post = (self.start[0] + math.cos(self.start[2]), self.start[1] + math.sin(self.start[2]))
        self.robot.post = post

        def distance():
            pose = self.robot.state()[0]
            return math.hypot(post[0] - pose[0], post[1] - pose[1])

        def stopped(twists):
            recent = self.robot.twists[-twists:]
            return len(recent) == twists and all(v == 0.0 for _, v, _ in recent)
        self.send(*self.post_goal)
        wait_for(lambda: distance() < POST_RANGE_MIN, 30.0, 'the post to go blind')
        wait_for(lambda: stopped(20), 30.0, '20 twists without forward motion')
        return distance

    def test_a_post_the_laser_no_longer_sees_still_stops_the_robot(self):
        """A post 1 m ahead, on the way to post_goal: seen from afar, ``-inf`` once nearer than
        0.45 m, so only the remembered return (odom frame) can stop the robot at stop_distance
        (0.35 m from its centre); with the post gone the beam reads no return, which clears it,
        and the goal is reached."""
        distance = self.stop_at_a_blinded_post()
        self.assertGreater(distance(), 0.3)
        self.assertNotIn(self.client.get_state(), TERMINAL)
        self.robot.post = None
        self.assertEqual(self.wait_terminal(40.0), GoalStatus.SUCCEEDED,
                         self.client.get_goal_status_text())

    def test_clear_costmaps_forgets_the_remembered_post(self):
        """As move_base's service: the blinded post stops the robot only through the memory;
        after move_base/clear_costmaps nothing stops it any more (the post reads ``-inf``)."""
        self.stop_at_a_blinded_post()
        cleared = len(self.robot.twists)
        clear = rospy.ServiceProxy('move_base/clear_costmaps', Empty)
        clear.wait_for_service(10.0)
        clear()
        wait_for(lambda: any(v > 0.0 for _, v, _ in self.robot.twists[cleared:]), 30.0,
                 'forward motion after clear_costmaps')
        self.client.cancel_goal()
        self.assertEqual(self.wait_terminal(20.0), GoalStatus.PREEMPTED)

    def test_simple_goal_topic_starts_a_goal(self):
        """move_base_simple/goal becomes an action goal that succeeds, like move_base's."""
        results = []
        sub = rospy.Subscriber('move_base/result', MoveBaseActionResult, results.append)
        pub = rospy.Publisher('move_base_simple/goal', PoseStamped, queue_size=1)
        try:
            wait_for(lambda: pub.get_num_connections() > 0 and sub.get_num_connections() > 0,
                     10.0, 'move_base_simple/goal and move_base/result to connect')
            pub.publish(pose_stamped(*self.goal))
            wait_for(lambda: results, 40.0, 'a move_base result')
            self.assertEqual(results[-1].status.status, GoalStatus.SUCCEEDED)
            pose = self.robot.state()[0]
            self.assertLess(math.hypot(pose[0] - self.goal[0], pose[1] - self.goal[1]), 0.25)
        finally:
            sub.unregister()
            pub.unregister()


if __name__ == '__main__':
    rospy.init_node('test_sim_navigator')
    rostest.rosrun('lost_and_found', 'sim_navigator', SimNavigatorTest)
