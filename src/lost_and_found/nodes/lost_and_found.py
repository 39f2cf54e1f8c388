"""The rospy adapter of the recovery node ``lost_and_found`` (decisions: core/recovery.py)."""
import collections
import functools
import math
import queue
import threading

import numpy as np
import rospy
import tf2_ros
from actionlib_msgs.msg import GoalID
from fiducial_msgs.msg import FiducialTransformArray
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped, Twist
from move_base_msgs.msg import MoveBaseAction, MoveBaseActionGoal, MoveBaseActionResult, \
    MoveBaseGoal
from nav_msgs.msg import Odometry
from sensor_msgs.msg import LaserScan
from std_msgs.msg import Bool
from std_srvs.srv import Empty

from lost_and_found.core.fiducial import facing_yaw
from lost_and_found.core.reactive import Scan
from lost_and_found.core.recovery import Phase, RecoveryConfig, RecoveryCore, UserGoal
from lost_and_found.msg import SearchHint
from lost_and_found.nodes.conversions import lookup_waiting, pose_stamped, \
    transform_to_matrix, yaw_from_quaternion
from lost_and_found.nodes.goal_client import GoalClient
from lost_and_found.nodes.laser_mounts import LaserMounts
from lost_and_found.nodes.params import load_config
from lost_and_found.srv import GetViewpoint
from lost_and_found.state import StateClient

#: Seconds between two warnings about the same repeating problem.
_THROTTLE = 10.0

#: Timeout (s) of each move_base connection check after the first (background thread only).
_CHECK_TIMEOUT = 0.5

#: Interval (s) between connection checks while move_base is up: notices it going away.
_CHECK_INTERVAL_UP = 1.0

#: Longest wall-clock wait (s) between two looks at the ROS clock while pausing.
_POLL = 0.1

#: Wait (s) for move_base's clear_costmaps service (worker thread only).
_CLEAR_TIMEOUT = 1.0

#: Wait (s) for fiducial_localizer's viewpoint service (worker thread only).
_VIEWPOINT_TIMEOUT = 1.0

#: Wait (s) for tf odometry frame <- camera frame at a distant tag's stamp.
_TAG_TF_TIMEOUT = 0.05

#: The phases in which this node drives the base with twists (not move_base): a control step
#: that fails in one of them stops the robot.
TWIST_PHASES = (Phase.SPIN, Phase.WANDER, Phase.APPROACH, Phase.CHECK, Phase.STEP)

#: The saved-goal publisher's "last published" before anything was published.
_NOTHING_PUBLISHED = object()


# ------------------------------------------------------------------ conversions (no master)

def user_goal_from_pose(header, pose, goal_id=''):
    """A core UserGoal from a std_msgs/Header and a geometry_msgs/Pose."""
    p, q = pose.position, pose.orientation
    return UserGoal(header.frame_id, p.x, p.y, p.z, q.x, q.y, q.z, q.w, goal_id=goal_id)


def pose_stamped_from_goal(goal, stamp):
    """A geometry_msgs/PoseStamped of a core UserGoal, stamped ``stamp``."""
    msg = PoseStamped()
    msg.header.frame_id = goal.frame_id
    msg.header.stamp = stamp
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = goal.x, goal.y, goal.z
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = goal.qx, goal.qy, goal.qz, goal.qw
    return msg


def move_base_goal_from_leg(leg, frame_id, stamp):
    """A move_base_msgs/MoveBaseGoal for a spiral leg ``(x, y, yaw)`` in ``frame_id``."""
    return MoveBaseGoal(target_pose=pose_stamped(*leg, frame_id, stamp))


def scan_from_msg(msg):
    """The core Scan of a sensor_msgs/LaserScan."""
    return Scan(ranges=tuple(msg.ranges), angle_min=msg.angle_min,
                angle_increment=msg.angle_increment, range_min=msg.range_min,
                range_max=msg.range_max)


def tags_on_floor(msg, t_odom_camera):
    """``[(fiducial_id, x, y, facing_yaw), ...]`` in the odometry frame: the tags of a
    FiducialTransformArray with a finite transform, placed by ``t_odom_camera`` (4x4).
    ``facing_yaw`` is the direction of the tag's face normal on the floor (None for a tag lying
    flat)."""
    tags = []
    for ft in msg.transforms:
        t_cam_tag = transform_to_matrix(ft.transform)
        if not np.all(np.isfinite(t_cam_tag)):
            continue
        t_odom_tag = t_odom_camera @ t_cam_tag
        tags.append((ft.fiducial_id, float(t_odom_tag[0, 3]), float(t_odom_tag[1, 3]),
                     facing_yaw(t_odom_tag)))
    return tags


def twist_msg(twist):
    """A geometry_msgs/Twist for ``(v, w)``."""
    msg = Twist()
    msg.linear.x, msg.angular.z = twist
    return msg


def _stamp(msg):
    """The header stamp of ``msg`` in seconds, or None for an unstamped (zero) header."""
    stamp = msg.header.stamp.to_sec()
    return stamp if stamp > 0.0 else None


def _callerid(msg):
    """The node that published ``msg`` ('' when unknown)."""
    header = getattr(msg, '_connection_header', None) or {}
    return header.get('callerid', '')


# ------------------------------------------------------------------ the node

class RecoveryNode:
    """Runs RecoveryCore on ROS: saves the user's goal, spins, searches, resumes, asks for help.

    Subscribed topics:
        <state_namespace>/state (std_msgs/String, latched; via StateClient,
            ``~state_namespace``, default lost_service)
        amcl_pose (geometry_msgs/PoseWithCovarianceStamped): the last good pose (the spiral's
            centre with ``spiral_anchor: map``)
        scan (sensor_msgs/LaserScan): the reactive wander (during a search its returns are
            remembered in the odometry frame, placed by tf ``~base_frame`` <- the scan's frame)
        move_base_simple/goal (geometry_msgs/PoseStamped): user goals to remember
        move_base/goal (move_base_msgs/MoveBaseActionGoal): user goals to remember (their id)
        move_base/result (move_base_msgs/MoveBaseActionResult): how user goals ended
        move_base/cancel (actionlib_msgs/GoalID): someone else's cancel of the saved goal
            (its id, every goal, or every goal up to a stamp) forgets it unless the robot is
            localized with the user's own goal at move_base (whose PREEMPTED then says so):
            the robot lost or in the air, a re-send waiting or driving, aborted for good
        (remapping ``move_base`` moves these and ``move_base/cancel`` with the action)
        odom (nav_msgs/Odometry): wheel odometry: the spiral's frame and centre (``spiral_anchor:
            odom``), the reactive wander's stall check and where its remembered returns are
        <kidnap_namespace>/on_dock (std_msgs/Bool, latched; with ``~look_before_resume``,
            ``~max_doubts`` or ``~check_arrival``): a docked robot does not go to look at a
            tag, and docking counts as a fix
        initialpose (geometry_msgs/PoseWithCovarianceStamped; with ``~max_doubts``,
            ``~check_arrival`` or ``~clear_costmaps_jump``): a pose fix while localized (a
            tag's correction) means the estimate does not rest on the localizer alone (and
            during the turn at a reached goal, sends it again); one far from the estimate
            clears move_base's costmaps
        fiducial_localizer/search_hint (lost_and_found/SearchHint; with
            ``~follow_search_hints``): the way amcl's particles say a tag is; after a spin
            the robot turns that way before it wanders
        fiducial_localizer/distant_tags (fiducial_msgs/FiducialTransformArray; with
            ``~approach_tags``): mapped tags seen too far away to localize from, placed in the
            odometry frame by tf at their stamp; while searching, the robot drives closer
        tf ``~map_frame`` -> ``~base_frame`` (with ``~max_doubts`` and
            ``~stale_estimate_age``): its newest stamp's age; while stale, an abort of the
            resumed goal is no doubt
    Published topics:
        cmd_vel (geometry_msgs/Twist): spins and the reactive wander; one zero when stopping
        ~saved_goal (geometry_msgs/PoseStamped, latched): the saved goal; empty frame_id: none
        move_base/cancel (actionlib_msgs/GoalID): cancels the user's goal while lost
    Services called:
        <state_namespace>/change_state (lost_and_found/ChangeState): NAVIGATING, IDLE, NEED_HELP,
            and LOST when the resumed goal is aborted (or has not moved the robot for
            ``~resume_stall_time``) after an unconfirmed localization; each request names the
            state(s) it holds in (``expected``), so a stale one is refused
        move_base/clear_costmaps (std_srvs/Empty): at the start of every LOST episode, and
            after a pose fix ``~clear_costmaps_jump`` or farther from the estimate (with
            ``~clear_costmaps``; a missing service is logged, never waited for)
        fiducial_localizer/viewpoint (lost_and_found/GetViewpoint; ``~viewpoint_service``):
            where to look from, with ``~look_before_resume`` (a missing service: no look)
    Action clients:
        move_base (move_base_msgs/MoveBaseAction): spiral legs, the look's viewpoint and the
            re-sent saved goal
    Parameters:
        see RecoveryConfig (strategy, spin_speed, spiral_step, spiral_anchor, goal_timeout,
        goal_timeout_per_metre, leg_stall_time, leg_stall_distance, max_search_time,
        max_search_distance, rate,
        map_frame, base_frame, move_base_timeout, move_base_retry, hops_before_spiral,
        hop_distance, max_aborts, resume_retries, resume_retry_delay, resume_step_distance,
        max_doubts, resume_stall_time, resume_stall_distance, stale_estimate_age, state_namespace,
        scan_timeout, clear_costmaps, clear_costmaps_jump, look_around_every, explore,
        seek_walls, look_before_resume, look_timeout, look_dwell, viewpoint_service,
        kidnap_namespace, approach_tags, approach_standoff, approach_max_distance,
        approach_max_view_angle, approach_timeout, approach_tries, approach_dwell,
        approach_at_once, approach_clear_way, check_arrival, follow_search_hints,
        search_hint_max_age, reactive/*; README, "lost_and_found").
    """

    def __init__(self, core, config):
        """Wrap ``core``; nothing is connected until :meth:`start`."""
        self._core = core
        self._config = config
        self._lock = threading.Lock()      # serialises every call into the core
        self._done = collections.deque()   # results of our goals, drained by the timer
        self._requests = queue.Queue()     # calls to other nodes, made by a worker thread
        self._stopping = threading.Event()
        self._name = rospy.get_name()
        # Nothing published yet: the first call publishes even "no goal", so that the latched
        # topic always says what is saved (also to whoever watched a previous instance).
        self._published_goal = _NOTHING_PUBLISHED
        self._available = None
        self._client = None
        self._state_client = None
        self._mounts = LaserMounts(config.base_frame, None, "for the wander's memory")
        self._odom_frame = None     # frame_id of the latest odometry message
        self._tf_buffer = None      # from start()
        self._estimate_seen = False  # a map -> base transform was looked up once

    def start(self):
        """Create publishers, subscribers, the action client, the workers and the timer."""
        self._cmd_pub = rospy.Publisher('cmd_vel', Twist, queue_size=1)
        self._saved_pub = rospy.Publisher('~saved_goal', PoseStamped, queue_size=1, latch=True)
        self._publish_saved_goal()      # "none" until a goal is saved
        # Remapping 'move_base' moves the whole action, as actionlib does for its own topics.
        action = rospy.remap_name('move_base')
        self._cancel_pub = rospy.Publisher(action + '/cancel', GoalID, queue_size=10)
        self._clear_costmaps = rospy.ServiceProxy(action + '/clear_costmaps', Empty)
        self._viewpoint = rospy.ServiceProxy(self._config.viewpoint_service, GetViewpoint)
        self._client = GoalClient('move_base', MoveBaseAction)
        self._state_client = StateClient(self._config.state_namespace, on_change=self._on_state)
        self._tf_buffer = tf2_ros.Buffer()
        self._tf_listener = tf2_ros.TransformListener(self._tf_buffer)
        self._mounts.tf_buffer = self._tf_buffer
        rospy.Subscriber('amcl_pose', PoseWithCovarianceStamped, self._on_pose, queue_size=5)
        rospy.Subscriber('scan', LaserScan, self._on_scan, queue_size=1)
        rospy.Subscriber('odom', Odometry, self._on_odom, queue_size=1)
        rospy.Subscriber('move_base_simple/goal', PoseStamped, self._on_simple_goal,
                         queue_size=5)
        rospy.Subscriber(action + '/goal', MoveBaseActionGoal, self._on_action_goal,
                         queue_size=5)
        rospy.Subscriber(action + '/result', MoveBaseActionResult, self._on_result,
                         queue_size=10)
        rospy.Subscriber(action + '/cancel', GoalID, self._on_cancel, queue_size=10)
        if self._config.approach_tags:
            rospy.Subscriber('fiducial_localizer/distant_tags', FiducialTransformArray,
                             self._on_distant_tags, queue_size=1)
        if self._config.follow_search_hints:
            rospy.Subscriber('fiducial_localizer/search_hint', SearchHint,
                             self._on_search_hint, queue_size=1)
        if self._config.look_before_resume or self._config.max_doubts or \
                self._config.check_arrival:
            rospy.Subscriber(self._config.kidnap_namespace.rstrip('/') + '/on_dock', Bool,
                             self._on_dock, queue_size=1)
        if self._config.max_doubts or self._config.check_arrival or (
                self._config.clear_costmaps and self._config.clear_costmaps_jump > 0):
            rospy.Subscriber('initialpose', PoseWithCovarianceStamped, self._on_initialpose,
                             queue_size=5)
        for target in (self._watch_move_base, self._make_requests):
            threading.Thread(target=target, daemon=True).start()
        rospy.on_shutdown(self._on_shutdown)
        # reset=True: a clock that jumps back (a restarted simulation, a bag looped) must not
        # end the timer's thread, which is the whole control loop (the core shifts its
        # deadlines by the jump).
        self._timer = rospy.Timer(rospy.Duration(1.0 / self._config.rate), self._on_timer,
                                  reset=True)
        rospy.loginfo('%s: ready (strategy %s, rate %g Hz)', self._name,
                      self._config.strategy, self._config.rate)

    # -------------------------------------------------------------- callbacks

    def _now(self):
        return rospy.get_time()

    def _guard(self, what, function, *args):
        """Run ``function``; a bad message is logged (throttled) and skipped, never raised."""
        try:
            with self._lock:
                function(*args)
        except Exception as error:   # noqa: B902 - a callback must never die on bad input
            rospy.logwarn_throttle(_THROTTLE, '%s: skipped a bad %s: %r' % (
                self._name, what, error))
        self._publish_saved_goal()

    def _on_state(self, state):
        rospy.loginfo('%s: state %s', self._name, state.value)
        self._guard('state', lambda: self._core.on_state(state, self._now()))

    def _on_pose(self, msg):
        pose = msg.pose.pose
        self._guard('amcl_pose', lambda: self._core.on_pose(
            pose.position.x, pose.position.y, yaw_from_quaternion(pose.orientation)))

    def _on_scan(self, msg):
        mount = self._mounts.get(msg.header.frame_id)
        self._guard('scan', lambda: self._core.on_scan(scan_from_msg(msg), self._now(), mount,
                                                       _stamp(msg)))

    def _on_odom(self, msg):
        pose = msg.pose.pose
        if msg.header.frame_id.strip('/ '):
            self._odom_frame = msg.header.frame_id.strip('/ ')     # tf2 refuses '/odom'
        self._guard('odom', lambda: self._core.on_odom(
            pose.position.x, pose.position.y, self._now(), msg.header.frame_id,
            yaw_from_quaternion(pose.orientation), _stamp(msg)))

    def _on_search_hint(self, msg):
        self._guard('search hint', lambda: self._core.on_search_hint(
            msg.bearing if msg.found else None, msg.header.stamp.to_sec(), self._now()))

    def _on_simple_goal(self, msg):
        if _callerid(msg) == self._name:
            return
        self._guard('move_base_simple/goal', lambda: self._core.on_user_goal(
            user_goal_from_pose(msg.header, msg.pose), self._now()))

    def _on_action_goal(self, msg):
        if _callerid(msg) == self._name:
            return      # our own leg or re-send
        pose = msg.goal.target_pose
        self._guard('move_base/goal', lambda: self._core.on_user_goal(
            user_goal_from_pose(pose.header, pose.pose, msg.goal_id.id), self._now(),
            msg.goal_id.stamp.to_sec() or msg.header.stamp.to_sec()))

    def _on_cancel(self, msg):
        if _callerid(msg) == self._name:
            return      # our cancel of a leg, the look, or the user's goal while lost
        self._guard('move_base/cancel', lambda: self._core.on_user_cancel(
            msg.id, msg.stamp.to_sec(), self._now(), msg.id.startswith(self._name + '-')))

    def _on_distant_tags(self, msg):
        """Mapped tags fiducial_localizer saw but could not use, placed in odometry."""
        odom_frame, camera_frame = self._odom_frame, msg.header.frame_id.strip('/ ')
        if odom_frame is None or not camera_frame or \
                self._core.phase not in (Phase.SPIN, Phase.LEG, Phase.WANDER):
            return
        try:
            stamped = lookup_waiting(self._tf_buffer, odom_frame, camera_frame,
                                     msg.header.stamp, _TAG_TF_TIMEOUT)
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException, tf2_ros.InvalidArgumentException) as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: a distant tag not placed: no transform %s '
                                   '<- %s: %s' % (self._name, odom_frame, camera_frame,
                                                  error))
            return
        tags = tags_on_floor(msg, transform_to_matrix(stamped.transform))
        if tags:
            self._guard('distant tags', lambda: self._core.on_distant_tags(tags, self._now()))

    def _on_initialpose(self, msg):
        frame = msg.header.frame_id.lstrip('/')
        pose = msg.pose.pose
        # amcl takes initial poses in its global frame only; one in another frame moves nothing.
        fix = (pose.position.x, pose.position.y, yaw_from_quaternion(pose.orientation)) \
            if frame in ('', self._config.map_frame.lstrip('/')) else None
        self._guard('initialpose', lambda: self._core.on_pose_fix(fix))

    def _on_dock(self, msg):
        self._guard('on_dock', lambda: self._core.on_dock(msg.data))

    def _on_result(self, msg):
        goal_id = msg.status.goal_id.id
        # actionlib goal ids start with the sending node's name; ours arrive via _on_done.
        if goal_id.startswith(self._name + '-'):
            return
        self._guard('move_base/result', lambda: self._core.on_goal_done(
            msg.status.status, False, self._now(), goal_id, msg.status.goal_id.stamp.to_sec()))

    def _on_done(self, tag, status, _result):
        # Runs holding actionlib's goal mutex: hand over to the timer rather than take our
        # lock here (the timer may hold ours while it cancels through actionlib).
        self._done.append((tag, status))

    def _on_timer(self, _event):
        try:
            age = self._estimate_age()
            with self._lock:
                if age is not None:
                    self._core.on_estimate_age(age, self._now())
                while self._done:
                    tag, status = self._done.popleft()
                    self._core.on_goal_done(status, True, self._now(), tag)
                command = self._core.step(self._now())
            self._execute(command)
        except Exception as error:   # noqa: B902 - the control loop must keep running
            rospy.logerr_throttle(_THROTTLE, '%s: control step failed: %r' % (
                self._name, error))
            if self._core.phase in TWIST_PHASES:
                # This node drives the base now: stop it rather than let the last twist run.
                self._cmd_pub.publish(twist_msg((0.0, 0.0)))
        self._publish_saved_goal()

    def _estimate_age(self):
        """How old (s) the newest map -> base transform is (what move_base places the robot
        by; amcl future-dates it by its transform_tolerance), or None: not checked, or none.
        ``math.inf`` when the links of the chain have no time in common any more (one lags by
        more than tf keeps of the other), once the chain has been looked up whole: before
        that (the localizer's first transforms at start-up) such a gap says nothing."""
        config = self._config
        if not config.max_doubts or config.stale_estimate_age <= 0 or self._tf_buffer is None:
            return None
        try:
            stamped = self._tf_buffer.lookup_transform(
                config.map_frame.lstrip('/'), config.base_frame.lstrip('/'), rospy.Time(0))
        except tf2_ros.ExtrapolationException:
            return math.inf if self._estimate_seen else None
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.InvalidArgumentException):
            return None     # no localizer yet (or another tree): nothing to say about lag
        stamp = stamped.header.stamp.to_sec()
        if stamp <= 0.0:
            return None
        self._estimate_seen = True
        return self._now() - stamp

    # -------------------------------------------------------------- outputs

    def _execute(self, command):
        """Carry out a core Command (outside the core lock: actionlib takes its own locks)."""
        now = rospy.Time.now()
        if command.cancel:
            self._client.cancel_goal()
        if command.cancel_user is not None:
            # Stamped 0: an empty id then cancels every goal move_base has (actionlib's rule),
            # and leaves no mark. A stamp would cancel the goals stamped up to it and make
            # move_base recall every later goal stamped before it: after a clock reset (a
            # simulator's, a looped bag's) all of ours, the saved goal's re-sends too, until
            # the new clock passed the old one.
            self._cancel_pub.publish(GoalID(stamp=rospy.Time(0), id=command.cancel_user))
        if command.send_goal is not None:
            frame = command.goal_frame or self._config.map_frame
            # A leg in another frame (odom) is stamped 0, "the latest transform": move_base
            # transforms a goal at its stamp, and map -> odom at "now" may not exist yet.
            stamp = now if frame == self._config.map_frame else rospy.Time(0)
            self._client.send_goal(
                move_base_goal_from_leg(command.send_goal, frame, stamp),
                done_cb=functools.partial(self._on_done, command.goal_tag))
        if command.resend_saved_goal:
            # Under the core lock, and only while the core still has this re-send out: a user
            # goal handled since the step replaced the saved goal and went to move_base
            # itself, and ours must not follow it there and preempt it. (The client's
            # callbacks never take this lock.)
            with self._lock:
                goal = self._core.saved_goal if self._core.resend_out(command.goal_tag) \
                    else None
                if goal is not None:
                    msg = MoveBaseGoal(target_pose=pose_stamped_from_goal(goal, now))
                    self._client.send_goal(msg, done_cb=functools.partial(self._on_done,
                                                                          command.goal_tag))
        if command.twist is not None:
            self._cmd_pub.publish(twist_msg(command.twist))
        if command.request_state is not None:
            self._requests.put(functools.partial(self._request_state, command.request_state,
                                                 command.reason, command.expected_states))
        if command.clear_costmaps:
            self._requests.put(self._clear_move_base_costmaps)
        if command.find_viewpoint:
            self._requests.put(self._find_viewpoint)

    def _publish_saved_goal(self):
        """Publish the saved goal (latched) when it differs from the last one published."""
        with self._lock:
            goal = self._core.saved_goal
            if goal == self._published_goal:
                return
            self._published_goal = goal
        if goal is None:
            self._saved_pub.publish(PoseStamped())
        else:
            self._saved_pub.publish(pose_stamped_from_goal(goal, rospy.Time.now()))

    # -------------------------------------------------------------- workers

    def _make_requests(self):
        """Call other nodes off the control loop (a state request may take 2 s)."""
        while not self._stopping.is_set():
            try:
                call = self._requests.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                call()
            except Exception as error:   # noqa: B902 - the worker must outlive any call
                rospy.logerr_throttle(_THROTTLE, '%s: call to another node failed: %r' % (
                    self._name, error))

    def _request_state(self, state, reason, expected):
        accepted, message = self._state_client.request(state, reason, expected=expected)
        if accepted:
            rospy.loginfo('%s: requested %s: accepted', self._name, state.value)
        elif expected and self._state_client.state not in expected:
            # decided in a state that has moved on: refused as it should be
            rospy.loginfo('%s: requested %s: refused: %s', self._name, state.value, message)
        else:
            rospy.logwarn('%s: requested %s: refused: %s', self._name, state.value, message)

    def _clear_move_base_costmaps(self):
        """Ask move_base to clear its costmaps; a missing or failing service is logged."""
        try:
            self._clear_costmaps.wait_for_service(_CLEAR_TIMEOUT)
            self._clear_costmaps()
            rospy.loginfo('%s: cleared move_base\'s costmaps', self._name)
        except (rospy.ROSException, rospy.ServiceException) as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: could not clear move_base\'s costmaps (%s): '
                                   'its local costmap may hold obstacles of another place'
                                   % (self._name, error))

    def _find_viewpoint(self):
        """Ask fiducial_localizer where to look from; hand the answer to the core (a missing
        or failing service is an answer too: no viewpoint)."""
        viewpoint = None
        try:
            self._viewpoint.wait_for_service(_VIEWPOINT_TIMEOUT)
            answer = self._viewpoint()
            why = answer.message
            if answer.found:
                pose = answer.pose.pose
                viewpoint = (pose.position.x, pose.position.y,
                             yaw_from_quaternion(pose.orientation))
                if answer.pose.header.frame_id.lstrip('/') not in ('', self._config.map_frame):
                    viewpoint = None
                    why = 'the viewpoint is in %r, not in map_frame %r' % (
                        answer.pose.header.frame_id, self._config.map_frame)
        except (rospy.ROSException, rospy.ServiceException) as error:
            why = 'no answer from %s: %s' % (self._viewpoint.resolved_name, error)
            rospy.logwarn_throttle(_THROTTLE, '%s: %s' % (self._name, why))
        self._guard('viewpoint', lambda: self._core.on_viewpoint(viewpoint, why, self._now()))

    def _watch_move_base(self):
        """Track move_base availability in the background so the loop never waits for it."""
        timeout = self._config.move_base_timeout
        while not self._stopping.is_set() and not rospy.is_shutdown():
            try:
                available = self._client.wait_for_server(rospy.Duration(max(timeout, 0.01)))
            except Exception as error:   # noqa: B902 - e.g. shutdown mid-wait
                rospy.logwarn_throttle(_THROTTLE, '%s: move_base check failed: %r' % (
                    self._name, error))
                available = False
            timeout = _CHECK_TIMEOUT
            if available != self._available:
                if available:
                    rospy.loginfo('%s: move_base is available', self._name)
                else:
                    rospy.logwarn('%s: move_base is unavailable; retrying every %g s',
                                  self._name, self._config.move_base_retry)
                self._available = available
            with self._lock:
                self._core.on_move_base_available(available)
            self._pause(_CHECK_INTERVAL_UP if available else self._config.move_base_retry)

    def _pause(self, seconds):
        """Wait ``seconds`` of ROS time (sim time in a simulation, like every other period of
        this node), returning early on shutdown or when the clock jumps back."""
        start = rospy.get_time()
        while not self._stopping.is_set() and not rospy.is_shutdown():
            now = rospy.get_time()
            if now < start or now - start >= seconds:
                return
            self._stopping.wait(min(seconds - (now - start), _POLL))

    def _on_shutdown(self):
        self._stopping.set()
        with self._lock:
            searching = self._core.phase != Phase.IDLE
            command = self._core.shutdown()
        if command.cancel or searching:
            rospy.loginfo('%s: shutting down: cancelling the search', self._name)
        try:
            self._execute(command)
        except Exception as error:   # noqa: B902 - best effort while ROS tears down
            rospy.logwarn('%s: shutdown: %r', self._name, error)


def main():
    """Run the lost_and_found recovery node."""
    rospy.init_node('lost_and_found')
    config = load_config(RecoveryConfig)
    node = RecoveryNode(RecoveryCore(config), config)
    node.start()
    rospy.spin()
