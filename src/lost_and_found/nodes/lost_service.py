"""The lost_service node: the rospy adapter around core.lost_service.LostService."""
import math
import threading

import rospy
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from std_msgs.msg import Bool, Empty, Float64, String
from std_srvs.srv import Empty as EmptySrv, EmptyResponse

from lost_and_found.core.lost_detector import CovarianceError, covariance_features
from lost_and_found.core.lost_service import LostService, LostServiceConfig, Pose2D
from lost_and_found.msg import LocalizationStatus
from lost_and_found.nodes.conversions import pose_with_covariance, yaw_from_quaternion
from lost_and_found.nodes.params import load_config
from lost_and_found.nodes.shutdown import quiet_at_shutdown
from lost_and_found.srv import ChangeState, ChangeStateResponse
from lost_and_found.state import parse_state, parse_states


def pose_message(reseed, frame_id, stamp):
    """A PoseWithCovarianceStamped for a core Reseed."""
    pose = reseed.pose
    return pose_with_covariance(pose.x, pose.y, pose.yaw, reseed.covariance(), frame_id, stamp)


def status_message(status, stamp):
    """A LocalizationStatus for a core Status."""
    msg = LocalizationStatus()
    msg.header.stamp = stamp
    msg.tier = status.tier
    msg.status = status.status
    msg.lost_detector_status = status.lost_detector_status
    msg.is_lost = status.is_lost
    msg.kidnapped = status.kidnapped
    msg.state = status.state
    return msg


class LostServiceNode:
    """ROS adapter of LostService: the single owner of the robot state.

    Subscribed topics: ``lost_detector/status`` (std_msgs/String), ``lost_detector/p_lost``
    (std_msgs/Float64),
    ``<kidnap_namespace>/picked_up``, ``/kidnapped``, ``/on_dock`` (std_msgs/Bool),
    ``amcl_pose`` (geometry_msgs/PoseWithCovarianceStamped), ``initialpose`` (fixes from others).
    Published topics: ``~status`` (lost_and_found/LocalizationStatus, latched, on change),
    ``~state`` (std_msgs/String, latched), ``~last_good_pose`` (geometry_msgs/PoseStamped,
    latched: where a put-down re-seeds), ``initialpose`` (re-seeds, and a fix from another
    node that arrived just after one, sent again), ``lost_detector/reset``
    (std_msgs/Empty).
    Services: ``~change_state`` (lost_and_found/ChangeState), ``~reset`` (std_srvs/Empty).
    Service clients: ``global_localization`` and ``request_nomotion_update`` (std_srvs/Empty,
    amcl's).
    Parameters: see LostServiceConfig.
    """

    def __init__(self, core, config):
        """Keep the core; ``start()`` wires the ROS side."""
        self.core = core
        self.config = config
        self._lock = threading.Lock()
        self._last_status = None

    def start(self):
        """Create publishers, subscribers and services; publish the initial state.

        The worker and every publisher come before the first subscriber: the detector's and
        the kidnap monitor's topics are latched, and their first messages may arrive at once.
        """
        self._worker = ServiceWorker(on_failure=self._on_call_failed)
        self._status_pub = rospy.Publisher('~status', LocalizationStatus, queue_size=10,
                                           latch=True)
        self._state_pub = rospy.Publisher('~state', String, queue_size=10, latch=True)
        self._initialpose_pub = rospy.Publisher('initialpose', PoseWithCovarianceStamped,
                                                queue_size=1)
        self._reset_pub = rospy.Publisher('lost_detector/reset', Empty, queue_size=1)
        self._pose_pub = rospy.Publisher('~last_good_pose', PoseStamped, queue_size=1,
                                         latch=True)
        self._publish_status()
        ns = self.config.kidnap_namespace.rstrip('/')
        quiet = quiet_at_shutdown
        rospy.Subscriber('lost_detector/status', String, quiet(self._on_detector),
                         queue_size=50)
        rospy.Subscriber('lost_detector/p_lost', Float64, quiet(self._on_p_lost), queue_size=50)
        rospy.Subscriber(ns + '/picked_up', Bool, quiet(self._on_bool), self.core.on_picked_up,
                         queue_size=10)
        rospy.Subscriber(ns + '/kidnapped', Bool, quiet(self._on_bool), self.core.on_kidnapped,
                         queue_size=10)
        rospy.Subscriber(ns + '/on_dock', Bool, quiet(self._on_bool), self.core.on_dock,
                         queue_size=10)
        rospy.Subscriber('amcl_pose', PoseWithCovarianceStamped, quiet(self._on_pose),
                         queue_size=10)
        rospy.Subscriber('initialpose', PoseWithCovarianceStamped, quiet(self._on_initialpose),
                         queue_size=10)
        rospy.Service('~change_state', ChangeState, self._on_change_state)
        rospy.Service('~reset', EmptySrv, self._on_reset)
        # reset=True: a clock that jumps back (a restarted simulation, a bag looped) must not
        # end the timer's thread, or LOCALIZING would never time out.
        rospy.Timer(rospy.Duration(0.1), quiet(self._on_timer), reset=True)
        rospy.loginfo('lost_service: state %s, waiting for the lost detector and kidnap monitor',
                      self.core.state.value)

    def _handle(self, handler, *args, fix=None):
        """Run a core handler under the lock, then act on what it asks and publish.

        ``fix``: the initialpose message the handler was told about (to be sent again when
        the core asks).
        """
        with self._lock:
            actions = handler(*args)
            self._act(actions, fix)
            self._publish_status()

    def _act(self, actions, fix=None):
        if actions.reseed is not None:
            pose = actions.reseed.pose
            rospy.loginfo('re-seeding amcl at (%.2f, %.2f, %.0f deg), sigma xy %.2f m yaw %.0f deg',
                          pose.x, pose.y, math.degrees(pose.yaw), actions.reseed.sigma_xy,
                          math.degrees(actions.reseed.sigma_yaw))
            self._initialpose_pub.publish(
                pose_message(actions.reseed, self.config.map_frame, rospy.Time.now()))
        if actions.resend_fix and fix is not None:
            # The same message, stamp included: amcl carries it along the odometry since then.
            self._initialpose_pub.publish(fix)
            rospy.loginfo('sent the fix from %s again, so that amcl applies it after our '
                          're-seed', fix._connection_header.get('callerid', '?'))
        if actions.reset_detector:
            self._reset_pub.publish(Empty())
        if actions.global_localization:
            self._worker.call('global_localization', announce=True)
        if actions.nomotion_update:
            self._worker.call('request_nomotion_update')

    def _on_timer(self, event):
        self._handle(self.core.tick, rospy.get_time())

    def _on_call_failed(self, name):
        """The worker could not call ``name`` (an amcl service): the core may try again."""
        if name == 'global_localization':
            self._handle(self.core.on_global_localization_failed, rospy.get_time())

    def _publish_status(self):
        status = self.core.status()
        if status == self._last_status:
            return
        if self._last_status is None or status.state != self._last_status.state:
            self._state_pub.publish(String(data=status.state))
        if self._last_status is None or status.tier != self._last_status.tier:
            rospy.loginfo('localization %s (state %s, detector %s, kidnapped %s)',
                          status.status, status.state, status.lost_detector_status,
                          status.kidnapped)
        self._last_status = status
        self._status_pub.publish(status_message(status, rospy.Time.now()))

    def _on_detector(self, msg):
        try:
            self._handle(self.core.on_detector_status, msg.data, rospy.get_time())
        except ValueError as error:
            rospy.logwarn_throttle(10.0, 'lost_service: %s' % error)

    def _on_p_lost(self, msg):
        try:
            self._handle(self.core.on_detector_p_lost, msg.data, rospy.get_time())
        except ValueError as error:
            rospy.logwarn_throttle(10.0, 'lost_service: %s' % error)

    def _on_bool(self, msg, handler):
        self._handle(handler, bool(msg.data), rospy.get_time())

    def _on_pose(self, msg):
        p = msg.pose.pose
        values = (p.position.x, p.position.y, p.orientation.x, p.orientation.y,
                  p.orientation.z, p.orientation.w)
        if not all(math.isfinite(v) for v in values):
            rospy.logwarn_throttle(10.0, 'lost_service: non-finite amcl_pose ignored')
            return
        pose = Pose2D(p.position.x, p.position.y, yaw_from_quaternion(p.orientation))
        try:
            sigmas = covariance_features(msg.pose.covariance)
        except CovarianceError as error:
            rospy.logwarn_throttle(10.0, 'lost_service: amcl_pose covariance unusable: %s'
                                   % error)
            sigmas = None
        before = self.core.last_good_pose
        self._handle(self.core.on_pose, pose, sigmas, rospy.get_time())
        if self.core.last_good_pose != before:
            out = PoseStamped(header=msg.header, pose=msg.pose.pose)
            self._pose_pub.publish(out)

    def _on_initialpose(self, msg):
        if msg._connection_header.get('callerid') == rospy.get_name():
            return  # our own re-seed
        p = msg.pose.pose
        values = (p.position.x, p.position.y, p.orientation.x, p.orientation.y,
                  p.orientation.z, p.orientation.w) + tuple(msg.pose.covariance)
        if not all(math.isfinite(v) for v in values):
            # No fix: amcl cannot use it either, and LOCALIZING on it would stop the search.
            rospy.logwarn_throttle(10.0, 'lost_service: a pose on initialpose from %s that is '
                                   'not finite (position, orientation or covariance): '
                                   'ignored' % msg._connection_header.get('callerid', '?'))
            return
        frame = msg.header.frame_id.lstrip('/')
        if frame and frame != self.config.map_frame.lstrip('/'):
            # amcl ignores a pose in any frame but its global one: no fix to wait for
            rospy.logwarn_throttle(10.0, 'lost_service: a pose on initialpose from %s in frame '
                                   '%r, not %r (amcl ignores it): ignored'
                                   % (msg._connection_header.get('callerid', '?'),
                                      msg.header.frame_id, self.config.map_frame))
            return
        rospy.loginfo('pose fix on initialpose from %s',
                      msg._connection_header.get('callerid', '?'))
        self._handle(self.core.on_initialpose, rospy.get_time(), fix=msg)

    def _on_change_state(self, req):
        target = parse_state(req.state)
        expected, bad = parse_states(req.expected)
        with self._lock:
            if target is None:
                accepted, message = False, 'unknown state %r' % req.state
            elif bad is not None:
                accepted, message = False, 'unknown expected state %r' % bad
            else:
                accepted, message, actions = self.core.request(target, req.reason,
                                                               rospy.get_time(),
                                                               expected or None)
                self._act(actions)
            self._publish_status()
            return ChangeStateResponse(accepted=accepted, state=self.core.state.value,
                                       message=message)

    def _on_reset(self, req):
        rospy.loginfo('lost_service: reset requested')
        self._handle(self.core.reset, rospy.get_time())
        return EmptyResponse()


class ServiceWorker:
    """Calls std_srvs/Empty services (amcl's) off the callback threads, one at a time.

    A call already queued for the same service is not queued twice; a missing service is
    warned about (throttled) and never blocks a callback.
    """

    def __init__(self, timeout=2.0, on_failure=None):
        """Start the worker thread; each call waits at most ``timeout`` s for its service.
        ``on_failure(name)`` is called (on the worker thread) after a call that failed."""
        self._timeout = timeout
        self._on_failure = on_failure
        self._pending = []
        self._condition = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def call(self, name, announce=False):
        """Queue a call of service ``name``; ``announce`` logs its success at info level."""
        with self._condition:
            if all(queued != name for queued, _ in self._pending):
                self._pending.append((name, announce))
                self._condition.notify()

    def _run(self):
        while not rospy.is_shutdown():
            with self._condition:
                while not self._pending:
                    self._condition.wait()
                name, announce = self._pending.pop(0)
            resolved = rospy.resolve_name(name)
            try:
                rospy.wait_for_service(resolved, timeout=self._timeout)
                rospy.ServiceProxy(resolved, EmptySrv)()
                if announce:
                    rospy.loginfo('lost_service: called %s', resolved)
            except Exception as error:  # noqa: B902 - the worker thread must keep running
                # ROSException, ServiceException, or anything else a proxy raises: one failed
                # call must not end the thread, or every later call would be dropped unheard.
                rospy.logwarn_throttle(10.0, 'lost_service: %s failed: %r' % (resolved, error))
                if self._on_failure is not None:
                    try:
                        self._on_failure(name)
                    except Exception as report:  # noqa: B902 - the worker must keep running
                        rospy.logerr_throttle(10.0, 'lost_service: handling the failed call '
                                              'of %s: %r' % (resolved, report))


def _monitor_kidnap_after(params):
    """The kidnap monitor's ``kidnap_after`` parameter (``<kidnap_namespace>/kidnap_after``),
    or None when it is not set: lost_service then uses its own default."""
    namespace = params.get('kidnap_namespace', LostServiceConfig.kidnap_namespace)
    if not isinstance(namespace, str) or not namespace.strip('/ '):
        return None     # the config check names the bad namespace
    try:
        value = rospy.get_param(namespace.rstrip('/') + '/kidnap_after', None)
    except (KeyError, ValueError) as error:
        rospy.logwarn('lost_service: cannot read %s/kidnap_after: %s' % (namespace, error))
        return None
    if value is not None:
        rospy.loginfo('lost_service: kidnap_after %r, the kidnap monitor\'s' % (value,))
    return value


def main():
    """Run the lost_service node."""
    rospy.init_node('lost_service')
    config = load_config(LostServiceConfig, fallbacks={'kidnap_after': _monitor_kidnap_after})
    node = LostServiceNode(LostService(config), config)
    node.start()
    rospy.spin()
