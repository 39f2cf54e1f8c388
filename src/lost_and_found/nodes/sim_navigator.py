"""The rospy adapter of ``sim_navigator``, a move_base stand-in (decisions: sim/controller.py).

It serves move_base's interface on the simulator: the ``move_base`` action
(move_base_msgs/MoveBaseAction) and ``move_base_simple/goal``, a global plan on the inflated map
(sim/planner.py) from the *estimated* pose (tf ``map`` -> ``base_footprint``, the localizer's
estimate, as move_base does), and a pure-pursuit controller that stops for obstacles in ``scan``,
remembered in the odometry frame as move_base's local costmap remembers them.
Runs on sim time: every rate and timeout follows /clock.
"""
import math
import sys
import threading
import time

import actionlib
import numpy as np
import rospy
import tf2_ros
from geometry_msgs.msg import PoseStamped, Twist
from move_base_msgs.msg import MoveBaseAction, MoveBaseFeedback, MoveBaseResult
from nav_msgs.msg import Path
from sensor_msgs.msg import LaserScan
from std_srvs.srv import Empty, EmptyResponse

from lost_and_found.core import geometry
from lost_and_found.core.obstacle_memory import ObstacleMemory
from lost_and_found.core.scan_agreement import LaserMount
from lost_and_found.nodes.conversions import lookup_waiting, pose_stamped, quaternion_from_yaw
from lost_and_found.nodes.params import load_config
from lost_and_found.nodes.simple_goal import SimpleGoalRelay
from lost_and_found.sim.controller import Navigation, NavigatorConfig, Outcome, PathFollower, \
    Step, scan_points
from lost_and_found.sim.gridmap import MapError, load_map
from lost_and_found.sim.planner import Planner

#: Seconds between two warnings about the same repeating problem.
_THROTTLE = 5.0

#: Wait (s) for the transform of a goal given in another frame.
_GOAL_TF_TIMEOUT = 1.0

#: Wait (s) for the odometry transform at a scan's stamp before taking the latest one.
_SCAN_TF_TIMEOUT = 0.1


# ------------------------------------------------------------------ conversions (no master)

def yaw_from_quaternion(q):
    """Yaw (rad) of a geometry_msgs/Quaternion.

    Raises:
        ValueError: for a non-finite or zero quaternion (move_base rejects those too).
    """
    return geometry.yaw_of(geometry.quaternion_to_matrix((q.x, q.y, q.z, q.w)))


def matrix_from_transform(transform):
    """The 4x4 matrix of a geometry_msgs/Transform."""
    t, q = transform.translation, transform.rotation
    return geometry.make_transform((q.x, q.y, q.z, q.w), (t.x, t.y, t.z))


def matrix_from_pose(pose):
    """The 4x4 matrix of a geometry_msgs/Pose."""
    p, q = pose.position, pose.orientation
    return geometry.make_transform((q.x, q.y, q.z, q.w), (p.x, p.y, p.z))


def scan_obstacles(msg, laser_pose):
    """Robot-frame obstacle points (N, 2) of a sensor_msgs/LaserScan seen from ``laser_pose``."""
    count = len(msg.ranges)
    angles = [msg.angle_min + i * msg.angle_increment for i in range(count)]
    return scan_points(msg.ranges, angles, laser_pose, msg.range_min, msg.range_max)


def twist_msg(linear, angular):
    """A geometry_msgs/Twist driving at ``linear`` m/s and turning at ``angular`` rad/s."""
    msg = Twist()
    msg.linear.x, msg.angular.z = linear, angular
    return msg


def path_msg(points, frame_id, stamp):
    """A nav_msgs/Path of (x, y) points, each oriented along the path."""
    msg = Path()
    msg.header.frame_id, msg.header.stamp = frame_id, stamp
    for i, (x, y) in enumerate(points):
        nx, ny = points[min(i + 1, len(points) - 1)]
        px, py = points[max(i - 1, 0)]
        pose = PoseStamped()
        pose.header = msg.header
        pose.pose.position.x, pose.pose.position.y = float(x), float(y)
        pose.pose.orientation = quaternion_from_yaw(math.atan2(ny - py, nx - px))
        msg.poses.append(pose)
    return msg


# ------------------------------------------------------------------ the node

class NavigationNode:
    """Runs a Navigation on ROS with move_base's interface.

    Subscribed topics:
        scan (sensor_msgs/LaserScan): the obstacle stop: the latest scan (ignored when older
            than ``~scan_timeout``) and the returns of earlier ones, remembered in
            ``~odom_frame`` until a later beam passes through them (see
            core/obstacle_memory.py); its frame is looked up in tf once.
        move_base_simple/goal (geometry_msgs/PoseStamped): a goal, forwarded to our own action
            (as move_base does, under this node's caller id) once the action server has
            started (see nodes/simple_goal.py).
        tf: ``~global_frame`` -> ``~robot_base_frame`` (the estimated pose), the laser frame,
            ``~odom_frame`` -> ``~robot_base_frame`` (where remembered returns are).
    Published topics:
        cmd_vel (geometry_msgs/Twist): at ``~controller_frequency`` while a goal is active;
            one zero twist when a goal ends; nothing while idle (so others may drive).
        ~plan (nav_msgs/Path): every new global plan.
        move_base/goal (move_base_msgs/MoveBaseActionGoal): goals from move_base_simple/goal.
    Services:
        move_base/clear_costmaps (std_srvs/Empty): forget the remembered returns, as
            move_base's service clears its costmaps (call it after the robot was carried: what
            it remembered, in the odometry frame, is somewhere else now).
    Action servers:
        move_base (move_base_msgs/MoveBaseAction): SUCCEEDED within the tolerances; ABORTED
            for no path (after ``~max_planning_retries``), no progress (after one re-plan), no
            pose or a goal that cannot be transformed; PREEMPTED on a new goal or a cancel.
            Feedback: the estimated pose at every control period.
    Parameters:
        see NavigatorConfig (map_file, global_frame, robot_base_frame, odom_frame,
        controller_frequency,
        planner_frequency, max_planning_retries, pose_timeout, scan_timeout, planner and
        follower parameters).
    """

    def __init__(self, navigation, config):
        """Wrap ``navigation``; nothing is connected until :meth:`start`."""
        self._nav = navigation
        self._config = config
        self._name = rospy.get_name()
        self._lock = threading.Lock()          # guards the scan, the memory, the laser poses
        self._scan = None                      # (receive time, LaserScan)
        self._memory = ObstacleMemory()        # returns of past scans, in the odom frame
        self._laser_poses = {}                 # scan frame_id -> (x, y, yaw) in the base frame
        self._server = None

    def start(self):
        """Create the tf listener, publishers, subscribers and the action server."""
        self._tf = tf2_ros.Buffer()
        self._tf_listener = tf2_ros.TransformListener(self._tf)
        self._cmd_pub = rospy.Publisher('cmd_vel', Twist, queue_size=1)
        self._plan_pub = rospy.Publisher('~plan', Path, queue_size=1, latch=True)
        # Remapping 'move_base' moves the whole action, as for the recovery node's client.
        action = rospy.remap_name('move_base')
        relay = SimpleGoalRelay(action)
        rospy.Subscriber('scan', LaserScan, self._on_scan, queue_size=1)
        self._server = actionlib.SimpleActionServer(action, MoveBaseAction,
                                                    execute_cb=self._execute, auto_start=False)
        rospy.Service(action + '/clear_costmaps', Empty, self._on_clear_costmaps)
        self._wait_for_pose()
        self._server.start()
        relay.start()
        rospy.loginfo('%s: ready: move_base action at %s, planning in %s for %s at %g Hz',
                      self._name, action, self._config.global_frame,
                      self._config.robot_base_frame, self._config.controller_frequency)

    def _wait_for_pose(self):
        """Return once tf has the robot in the global frame (or on shutdown).

        move_base's costmaps wait for that transform before its action server starts; so does
        this stand-in, or a goal sent at bring-up, before this node's tf listener has heard
        the localizer, would be aborted for want of a pose after ``pose_timeout``.
        """
        frames = (self._config.global_frame, self._config.robot_base_frame)
        logged = None
        while not rospy.is_shutdown():
            if self._tf.can_transform(frames[0], frames[1], rospy.Time(0)):
                return
            if logged is None or time.monotonic() - logged >= _THROTTLE:
                logged = time.monotonic()
                rospy.loginfo('%s: waiting for tf %s -> %s before taking goals', self._name,
                              *frames)
            time.sleep(0.05)

    # -------------------------------------------------------------- callbacks

    def _on_scan(self, msg):
        with self._lock:
            self._scan = (rospy.get_time(), msg)
        if not self._config.odom_frame:
            return
        laser_pose = self._laser_pose(msg.header.frame_id)
        robot = self._odom_pose(msg.header.stamp)
        if laser_pose is None or robot is None:
            return
        try:
            with self._lock:
                self._memory.add_scan(robot, msg, LaserMount(*laser_pose))
        except (ValueError, TypeError) as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: skipped a bad scan: %r' % (self._name, error))

    def _on_clear_costmaps(self, _request):
        with self._lock:
            forgotten = len(self._memory)
            self._memory.clear()
        rospy.loginfo('%s: clear_costmaps: forgot %d remembered returns',
                      self._name, forgotten)
        return EmptyResponse()

    # -------------------------------------------------------------- helpers

    def _goal_in_frame(self, target):
        """(x, y, yaw) of a PoseStamped goal in the global frame.

        Raises:
            ValueError: for a bad quaternion or position, or when tf cannot transform it.
        """
        goal = matrix_from_pose(target.pose)        # raises on a bad quaternion
        frame = target.header.frame_id.lstrip('/')
        if frame and frame != self._config.global_frame:
            try:
                transform = lookup_waiting(self._tf, self._config.global_frame, frame,
                                           rospy.Time(0), _GOAL_TF_TIMEOUT)
            except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                    tf2_ros.ExtrapolationException) as error:
                raise ValueError('cannot transform the goal from %s to %s: %s' % (
                    frame, self._config.global_frame, error)) from None
            goal = geometry.compose(matrix_from_transform(transform.transform), goal)
        x, y, yaw = geometry.pose2d_from_matrix(goal)
        if not all(math.isfinite(v) for v in (x, y, yaw)):
            raise ValueError('the goal (%r, %r, %r) is not finite' % (x, y, yaw))
        return x, y, yaw

    def _estimated_pose(self):
        """(x, y, yaw) of the robot in the global frame from tf, or None."""
        try:
            transform = self._tf.lookup_transform(
                self._config.global_frame, self._config.robot_base_frame, rospy.Time(0))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException) as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: no pose estimate (%s -> %s): %s' % (
                self._name, self._config.global_frame, self._config.robot_base_frame, error))
            return None
        stamp = transform.header.stamp.to_sec()
        age = rospy.get_time() - stamp
        if stamp > 0.0 and age > self._config.pose_timeout:
            # A dead localizer leaves its last transform in the buffer: do not drive on it.
            rospy.logwarn_throttle(_THROTTLE, '%s: the pose estimate is %.1f s old' % (
                self._name, age))
            return None
        return geometry.pose2d_from_matrix(matrix_from_transform(transform.transform))

    def _laser_pose(self, frame):
        """(x, y, yaw) of laser frame ``frame`` in the robot frame (static: cached), or None."""
        frame = frame.lstrip('/')
        if not frame or frame == self._config.robot_base_frame:
            return (0.0, 0.0, 0.0)
        if frame not in self._laser_poses:
            try:
                transform = self._tf.lookup_transform(
                    self._config.robot_base_frame, frame, rospy.Time(0))
            except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                    tf2_ros.ExtrapolationException) as error:
                rospy.logwarn_throttle(_THROTTLE, '%s: laser frame %s unknown, scan ignored: %s'
                                       % (self._name, frame, error))
                return None
            self._laser_poses[frame] = geometry.pose2d_from_matrix(
                matrix_from_transform(transform.transform))
        return self._laser_poses[frame]

    def _odom_pose(self, stamp):
        """(x, y, yaw) of the robot in the odometry frame at ``stamp`` (else the latest), or
        None."""
        odom, frame = self._config.odom_frame, self._config.robot_base_frame
        for when, wait in ((stamp, _SCAN_TF_TIMEOUT), (rospy.Time(0), 0.0)):
            try:
                transform = lookup_waiting(self._tf, odom, frame, when, wait)
                return geometry.pose2d_from_matrix(matrix_from_transform(transform.transform))
            except tf2_ros.ExtrapolationException:
                continue        # not at that stamp (yet): the latest will do
            except (tf2_ros.LookupException, tf2_ros.ConnectivityException) as error:
                rospy.logwarn_throttle(_THROTTLE, '%s: no %s -> %s transform: the obstacle '
                                       'stop sees the latest scan only: %s'
                                       % (self._name, odom, frame, error))
                return None
        return None

    def _obstacles(self, now):
        """Robot-frame points of the latest fresh scan and the remembered returns, or None."""
        remembered = None
        if self._config.odom_frame:
            robot = self._odom_pose(rospy.Time(0))
            if robot is not None:
                with self._lock:
                    remembered = self._memory.points_around(robot)
        latest = self._latest_obstacles(now)
        if remembered is None or latest is None:
            return latest if remembered is None else remembered
        return np.concatenate((latest, remembered))

    def _latest_obstacles(self, now):
        """Robot-frame points of the latest fresh scan, or None."""
        with self._lock:
            scan = self._scan
        if scan is None:
            rospy.logwarn_throttle(_THROTTLE, '%s: no scan yet: driving without the obstacle '
                                   'stop' % self._name)
            return None
        received, msg = scan
        if now - received > self._config.scan_timeout or now < received - 1.0:
            rospy.logwarn_throttle(_THROTTLE, '%s: the scan is %.1f s old: driving without the '
                                   'obstacle stop' % (self._name, now - received))
            return None
        laser_pose = self._laser_pose(msg.header.frame_id)
        if laser_pose is None:
            return None
        try:
            return scan_obstacles(msg, laser_pose)
        except (ValueError, TypeError) as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: skipped a bad scan: %r' % (self._name, error))
            return None

    def _stop_robot(self):
        self._cmd_pub.publish(Twist())

    def _feedback(self, pose):
        self._server.publish_feedback(MoveBaseFeedback(base_position=pose_stamped(
            pose[0], pose[1], pose[2], self._config.global_frame, rospy.Time.now())))

    # -------------------------------------------------------------- the goal loop

    def _execute(self, goal):
        """The action's execute callback: runs one goal to its end (actionlib's thread)."""
        try:
            self._run(goal)
        except Exception as error:   # noqa: B902 - never leave a goal hanging or the robot moving
            rospy.logerr('%s: goal failed: %r' % (self._name, error))
            self._nav.stop()
            self._stop_robot()
            if self._server.is_active():
                self._server.set_aborted(MoveBaseResult(), 'internal error: %r' % (error,))

    def _run(self, goal):
        try:
            x, y, yaw = self._goal_in_frame(goal.target_pose)
        except ValueError as error:
            rospy.logwarn('%s: goal aborted: %s', self._name, error)
            self._server.set_aborted(MoveBaseResult(), str(error))
            return
        rospy.loginfo('%s: new goal (%.2f, %.2f, %.2f) in %s', self._name, x, y, yaw,
                      self._config.global_frame)
        self._nav.start(x, y, yaw, rospy.get_time())
        rate = rospy.Rate(self._config.controller_frequency)
        last_status = None
        while not rospy.is_shutdown():
            if self._server.is_preempt_requested():
                self._nav.stop()
                self._stop_robot()
                rospy.loginfo('%s: goal preempted', self._name)
                self._server.set_preempted(MoveBaseResult(), 'preempted')
                return
            now = rospy.get_time()
            pose = self._estimated_pose()
            try:
                step = self._nav.step(pose, now, self._obstacles(now))
            except (ValueError, TypeError) as error:
                rospy.logwarn_throttle(_THROTTLE, '%s: control step skipped: %r' % (
                    self._name, error))
                step = Step()
            if step.outcome is not None:
                self._stop_robot()
                if step.outcome is Outcome.SUCCEEDED:
                    rospy.loginfo('%s: goal reached', self._name)
                    self._server.set_succeeded(MoveBaseResult(), step.message)
                else:
                    rospy.logwarn('%s: goal aborted: %s', self._name, step.message)
                    self._server.set_aborted(MoveBaseResult(), step.message)
                return
            if step.new_path and self._nav.path is not None:
                self._plan_pub.publish(path_msg(self._nav.path.tolist(),
                                                self._config.global_frame, rospy.Time.now()))
            if step.status != last_status:
                rospy.logdebug('%s: %s', self._name, step.status and step.status.value)
                last_status = step.status
            self._cmd_pub.publish(twist_msg(step.linear, step.angular))
            if pose is not None:
                self._feedback(pose)
            try:
                rate.sleep()
            except rospy.ROSTimeMovedBackwardsException:
                rospy.logwarn('%s: sim time moved backwards', self._name)
            except rospy.ROSInterruptException:
                break
        self._nav.stop()
        self._stop_robot()
        if self._server.is_active():
            self._server.set_aborted(MoveBaseResult(), 'shutting down')


def main():
    """Run the sim_navigator node."""
    rospy.init_node('sim_navigator')
    config = load_config(NavigatorConfig)
    try:
        grid = load_map(config.map_file)
    except MapError as error:
        rospy.logfatal('%s: bad parameter map_file=%r: %s', rospy.get_name(), config.map_file,
                       error)
        sys.exit(1)
    planner = Planner(grid, config.planner_config())
    node = NavigationNode(Navigation(planner, PathFollower(config.follower_config()), config),
                          config)
    node.start()
    rospy.spin()
