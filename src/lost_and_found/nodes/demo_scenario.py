"""The rospy adapter of ``demo_scenario``: the scripted kidnap demo (decisions: sim/scenario.py).

It waits for the simulator and the package, sends goal G through move_base, has sim_world lift
the robot half way and put it down in another room, prints a timeline line per event, and ends
when the robot reaches G after being found (exit 0) or when the time budget is spent (exit 1).
It writes ``kidnap_demo.png``, ``kidnap_demo.bag`` and ``result.json`` into ``~output_dir``.
"""
import dataclasses
import json
import math
import os
import sys
import threading
import time

import rosbag
import rosgraph
import rospy
from actionlib_msgs.msg import GoalStatus
from geometry_msgs.msg import Pose2D, PoseStamped, PoseWithCovarianceStamped
from kobuki_msgs.msg import WheelDropEvent
from move_base_msgs.msg import MoveBaseAction, MoveBaseActionGoal
from std_msgs.msg import String

from lost_and_found.msg import LocalizationStatus
from lost_and_found.nodes.conversions import yaw_from_quaternion
from lost_and_found.nodes.goal_client import GoalClient
from lost_and_found.nodes.lost_and_found import move_base_goal_from_leg
from lost_and_found.nodes.params import load_config
from lost_and_found.sim.scenario import DemoConfig, DemoScenario, Step, plot_demo
from lost_and_found.srv import Kidnap, KidnapRequest

#: Seconds between two warnings about the same repeating problem.
_THROTTLE = 10.0
#: Wall seconds between two checks of the main loop.
_POLL = 0.05
#: Wall seconds without the sim clock moving after which the simulator is declared dead.
_CLOCK_STALL = 30.0
#: Nodes that must be up before the goal is sent (names relative to this node's namespace).
REQUIRED_NODES = ('sim_world', 'sim_localizer', 'sim_navigator', 'lost_service',
                  'lost_detector', 'kidnap_monitor', 'lost_and_found')


def required_nodes(config):
    """The nodes the demo waits for: the fiducial node too unless the map has no tags."""
    if config.fiducial_map:
        return REQUIRED_NODES + (config.fiducial_node,)
    return REQUIRED_NODES


# ------------------------------------------------------------------ conversions (no master)

def pose_of(pose):
    """(x, y, yaw) of a geometry_msgs/Pose."""
    return pose.position.x, pose.position.y, yaw_from_quaternion(pose.orientation)


def sigma_xy(covariance):
    """Std dev (m) along the major axis of the x-y block of a row-major 6x6 covariance."""
    a, b, d = covariance[0], covariance[1], covariance[7]
    major = 0.5 * (a + d) + math.sqrt(max(0.0, 0.25 * (a - d) ** 2 + b * b))
    return math.sqrt(max(0.0, major))


def goal_msg(pose, frame_id, stamp):
    """A move_base_msgs/MoveBaseGoal for ``pose`` (x, y, yaw) in ``frame_id``."""
    return move_base_goal_from_leg(pose, frame_id, stamp)


def kidnap_request(pose, hold):
    """A lost_and_found/Kidnap request putting the robot down at ``pose`` after ``hold`` s."""
    x, y, yaw = pose
    return KidnapRequest(pose=Pose2D(x=x, y=y, theta=yaw), random=False, min_distance=0.0,
                         hold=hold)


def callerid(msg):
    """The publishing node of a received message ('' when unknown)."""
    header = getattr(msg, '_connection_header', None) or {}
    return header.get('callerid', '')


# ------------------------------------------------------------------ the node

class DemoScenarioNode:
    """Runs the kidnap demo on ROS and records it.

    Subscribed topics:
        sim_world/ground_truth (geometry_msgs/PoseStamped): the true pose
        amcl_pose (geometry_msgs/PoseWithCovarianceStamped): the estimate
        lost_service/state (std_msgs/String, latched): the robot state
        lost_service/status (lost_and_found/LocalizationStatus, latched): the tier
        lost_detector/status (std_msgs/String): normal / confused / lost
        initialpose (geometry_msgs/PoseWithCovarianceStamped): re-seeds and fiducial fixes
        lost_and_found/saved_goal (geometry_msgs/PoseStamped, latched): the recovery's saved goal
        move_base/goal (move_base_msgs/MoveBaseActionGoal): G, its resend and the search legs
        mobile_base/events/wheel_drop (kobuki_msgs/WheelDropEvent): lift and put-down
    Published topics:
        None (besides the move_base action client's).
    Services called:
        sim_world/kidnap (lost_and_found/Kidnap): once, half way to G
    Action clients:
        move_base (move_base_msgs/MoveBaseAction): goal G
    Parameters:
        see DemoConfig (map_file, fiducial_map, output_dir, start_pose, goal, kidnap_pose,
        kidnap_fraction, kidnap_hold, goal_tolerance, time_budget, ready_timeout, map_frame,
        fiducial_node, found_error, lost_error, write_bag).
    Output files (in ``~output_dir``):
        kidnap_demo.png, kidnap_demo.bag, result.json (``success`` decides tools/demo.sh).
    """

    def __init__(self, core, config):
        """Wrap ``core``; nothing is connected until :meth:`start`."""
        self._core = core
        self._config = config
        self._lock = threading.Lock()        # serialises every call into the core
        self._bag_lock = threading.Lock()
        self._bag = None
        self._printed = 0
        self._name = rospy.get_name()
        self._seen = set()                   # topics that delivered at least one message
        self._client = None
        self._goal_sent = False
        self._clock_start = None            # (sim, wall) times when G was sent
        self._kidnap = None

    # -------------------------------------------------------------- set-up

    def start(self):
        """Open the bag, subscribe, create the action client and the service proxy."""
        os.makedirs(self._config.output_dir, exist_ok=True)
        if self._config.write_bag:
            self._bag = rosbag.Bag(os.path.join(self._config.output_dir, 'kidnap_demo.bag'),
                                   'w')
        rospy.on_shutdown(self._on_shutdown)
        subscriptions = (
            ('sim_world/ground_truth', PoseStamped, self._on_ground_truth),
            ('amcl_pose', PoseWithCovarianceStamped, self._on_estimate),
            ('lost_service/state', String, self._on_state),
            ('lost_service/status', LocalizationStatus, self._on_status),
            ('lost_detector/status', String, self._on_detector),
            ('initialpose', PoseWithCovarianceStamped, self._on_initialpose),
            ('lost_and_found/saved_goal', PoseStamped, self._on_saved_goal),
            ('move_base/goal', MoveBaseActionGoal, self._on_goal),
            ('mobile_base/events/wheel_drop', WheelDropEvent, self._on_wheel_drop),
        )
        for topic, msg_type, handler in subscriptions:
            name = rospy.resolve_name(topic)
            rospy.Subscriber(topic, msg_type, self._callback, (name, handler), queue_size=50)
        self._client = GoalClient('move_base', MoveBaseAction)
        self._kidnap = rospy.ServiceProxy('sim_world/kidnap', Kidnap)

    def _missing(self):
        """What is not ready yet (an empty list when everything is)."""
        missing = []
        if rospy.Time.now().is_zero():
            missing.append('/clock (sim_world)')
        for topic in ('sim_world/ground_truth', 'lost_service/state'):
            if rospy.resolve_name(topic) not in self._seen:
                missing.append(rospy.resolve_name(topic))
        try:
            _, subscribers, services = rosgraph.Master(self._name).getSystemState()
        except Exception as error:  # noqa: B902 - any master error means "not yet"
            return missing + ['the ROS master (%s)' % error]
        nodes = {n for _, names in subscribers for n in names}
        missing += [n for n in (rospy.resolve_name(m) for m in required_nodes(self._config))
                    if n not in nodes]
        if not any(name == rospy.resolve_name('sim_world/kidnap') for name, _ in services):
            missing.append(rospy.resolve_name('sim_world/kidnap'))
        if not missing and not self._client.wait_for_server(rospy.Duration(0.01)):
            missing.append('the move_base action server')
        # The recovery node must be connected to move_base/goal before G is sent, or it
        # would not save G; every subscriber of the goal topic must be connected to us.
        goal_topic = rospy.resolve_name('move_base') + '/goal'
        wanted = sum(len(names) for topic, names in subscribers if topic == goal_topic)
        if not missing and self._client.action_client.pub_goal.get_num_connections() < wanted:
            missing.append('connections to %s' % goal_topic)
        return missing

    def wait_ready(self):
        """Wait (wall time, at most ``ready_timeout``) for everything; return what is missing."""
        end = time.monotonic() + self._config.ready_timeout
        missing = ['everything']
        while not rospy.is_shutdown() and time.monotonic() < end:
            missing = self._missing()
            if not missing:
                return []
            rospy.rostime.wallsleep(0.1)
        return missing

    # -------------------------------------------------------------- callbacks

    def _callback(self, msg, args):
        topic, handler = args
        self._seen.add(topic)
        now = rospy.Time.now()
        try:
            with self._lock:
                handler(msg, now.to_sec())
        except Exception as error:   # noqa: B902 - a callback must never die on bad input
            rospy.logwarn_throttle(_THROTTLE, '%s: skipped a bad message on %s: %r' % (
                self._name, topic, error))
        if self._bag is not None:
            try:
                with self._bag_lock:
                    if self._bag is not None:
                        self._bag.write(topic, msg, now if not now.is_zero() else None)
            except Exception as error:   # noqa: B902 - recording is best effort
                rospy.logwarn_throttle(_THROTTLE, '%s: cannot record %s: %r' % (
                    self._name, topic, error))

    def _on_ground_truth(self, msg, t):
        self._core.on_ground_truth(t, *pose_of(msg.pose))

    def _on_estimate(self, msg, t):
        self._core.on_estimate(t, *pose_of(msg.pose.pose))

    def _on_state(self, msg, t):
        self._core.on_state(t, msg.data)

    def _on_status(self, msg, t):
        self._core.on_status(t, msg.tier, msg.status)

    def _on_detector(self, msg, t):
        self._core.on_detector(t, msg.data)

    def _on_initialpose(self, msg, t):
        x, y, yaw = pose_of(msg.pose.pose)
        self._core.on_initialpose(t, x, y, yaw, sigma_xy(msg.pose.covariance), callerid(msg))

    def _on_saved_goal(self, msg, t):
        present = bool(msg.header.frame_id)
        self._core.on_saved_goal(t, present, msg.pose.position.x, msg.pose.position.y)

    def _on_goal(self, msg, t):
        position = msg.goal.target_pose.pose.position
        self._core.on_goal(t, position.x, position.y)

    def _on_wheel_drop(self, msg, t):
        self._core.on_wheel_drop(t, msg.wheel, msg.state == WheelDropEvent.DROPPED)

    # -------------------------------------------------------------- the run

    def _print_new(self):
        with self._lock:
            entries = self._core.entries_since(self._printed)
            self._printed += len(entries)
        for entry in entries:
            print(entry.format(), flush=True)

    def _step(self, t):
        with self._lock:
            return self._core.step(t)

    def run(self):
        """Send G, kidnap half way, watch until the core says the demo is over."""
        t = rospy.get_time()
        with self._lock:
            self._core.goal_sent(t)
        self._goal_sent = True
        self._clock_start = (t, time.monotonic())
        self._client.send_goal(goal_msg(self._config.goal, self._config.map_frame,
                                        rospy.Time.now()))
        last_sim, last_wall = t, time.monotonic()
        while not rospy.is_shutdown():
            t = rospy.get_time()
            if t > last_sim:
                last_sim, last_wall = t, time.monotonic()
            elif time.monotonic() - last_wall > _CLOCK_STALL:
                with self._lock:
                    self._core.give_up(t, 'the sim clock stopped for %.0f wall s' % _CLOCK_STALL)
            step = self._step(t)
            if step == Step.KIDNAP:
                self._call_kidnap(t)
            self._print_new()
            if step == Step.FINISH:
                break
            rospy.rostime.wallsleep(_POLL)
        self._print_new()

    def _call_kidnap(self, t):
        """Call sim_world/kidnap (it returns once the robot is lifted)."""
        try:
            self._kidnap.wait_for_service(timeout=5.0)
            response = self._kidnap(kidnap_request(self._config.kidnap_pose,
                                                   self._config.kidnap_hold))
        except (rospy.ServiceException, rospy.ROSException) as error:
            with self._lock:
                self._core.kidnap_result(t, False, str(error))
            return
        pose = (response.pose.x, response.pose.y, response.pose.theta)
        with self._lock:
            self._core.kidnap_result(rospy.get_time(), response.success, response.message,
                                     pose if response.success else None)

    # -------------------------------------------------------------- the end

    def finish(self, not_ready=None):
        """Stop what is in flight, write the outputs, print the figures; return the exit code."""
        if not_ready:
            with self._lock:
                self._core.give_up(rospy.get_time(), 'not ready after %.0f s: %s' % (
                    self._config.ready_timeout, ', '.join(not_ready)))
            self._print_new()
        if self._goal_sent and self._client.get_state() in (GoalStatus.PENDING,
                                                            GoalStatus.ACTIVE):
            self._client.cancel_goal()
        self._close_bag()
        with self._lock:
            result = self._core.result()
            lines = self._core.figure_lines()
        result['map_file'] = self._config.map_file
        if self._clock_start is not None:
            sim = rospy.get_time() - self._clock_start[0]
            wall = time.monotonic() - self._clock_start[1]
            if wall > 0:
                # The whole graph at work (driving, kidnap, search, resume): how many sim
                # seconds it got through per wall second.
                result['real_time_factor'] = sim / wall
                text = 'real-time factor (sim s / wall s, G sent -> end): %.2f' % (sim / wall)
                lines = list(lines) + ['%s (%.1f sim s in %.1f wall s)' % (text, sim, wall)]
        out = self._config.output_dir
        try:
            self._plot(os.path.join(out, 'kidnap_demo.png'))
        except Exception as error:   # noqa: B902 - the figure must not hide the result
            rospy.logerr('%s: cannot draw the figure: %r', self._name, error)
        with open(os.path.join(out, 'result.json'), 'w') as f:
            json.dump(result, f, indent=2)
        print('[demo] %s' % ('SUCCESS' if result['success'] else 'FAILURE: ' + result['reason']),
              flush=True)
        for line in lines:
            print('[demo] ' + line, flush=True)
        print('[demo] wrote %s' % ', '.join(os.path.join(out, n) for n in (
            'kidnap_demo.png', 'kidnap_demo.bag', 'result.json')), flush=True)
        return 0 if result['success'] else 1

    def _plot(self, path):
        from lost_and_found.core.fiducial import load_fiducial_map
        from lost_and_found.sim.gridmap import load_map
        grid = load_map(self._config.map_file)
        tags = None
        if self._config.fiducial_map:
            tags = load_fiducial_map(self._config.fiducial_map).poses
        with self._lock:
            plot_demo(path, self._core, grid=grid, tags=tags,
                      title='lost_and_found kidnap demo (%s)' % os.path.basename(
                          self._config.map_file))

    def _close_bag(self):
        with self._bag_lock:
            bag, self._bag = self._bag, None
        if bag is not None:
            bag.close()

    def _on_shutdown(self):
        self._close_bag()


def main():
    """Run the demo_scenario node; exit 0 only when the goal was reached after the kidnap."""
    rospy.init_node('demo_scenario')
    config = load_config(DemoConfig)
    # A relative output_dir is relative to the directory roslaunch was started in.
    config = dataclasses.replace(config, output_dir=os.path.abspath(config.output_dir))
    node = DemoScenarioNode(DemoScenario(config), config)
    node.start()
    rospy.loginfo('%s: waiting up to %.0f s for the simulator and lost_and_found',
                  rospy.get_name(), config.ready_timeout)
    missing = node.wait_ready()
    if missing or rospy.is_shutdown():
        code = node.finish(missing or ['shut down'])
    else:
        node.run()
        code = node.finish()
    rospy.signal_shutdown('demo finished')
    sys.exit(code)
