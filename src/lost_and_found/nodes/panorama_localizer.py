"""The panorama_localizer node: a full turn's laser returns, matched against the map, ->
``initialpose`` while the robot is lost.

The matching and the decision are in :mod:`lost_and_found.core.panorama`; this module places
each scan's returns in the odometry frame through tf, runs a match in a worker thread when
the laser has looked all the way round, and publishes the fix.
"""
import math
import threading
import time

import numpy as np
import rospy
import tf2_ros
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan

from lost_and_found.core.fiducial import initialpose_covariance
from lost_and_found.core.panorama import Panorama, PanoramaConfig, PanoramaMatcher
from lost_and_found.nodes.conversions import distance_map_from_msg, pose_with_covariance, \
    transform_to_matrix
from lost_and_found.nodes.params import load_config
from lost_and_found.state import LOCALIZED, State, StateClient

#: How often (s) a repeating problem (missing tf, a bad scan) is logged at most.
_THROTTLE = 10.0
#: A scan stamped this much (s) before the previous one means the clock jumped back.
_CLOCK_JUMP = 1.0


def planar(matrix):
    """``(x, y, yaw)`` of a 4x4 transform."""
    return (float(matrix[0, 3]), float(matrix[1, 3]),
            math.atan2(float(matrix[1, 0]), float(matrix[0, 0])))


class PanoramaLocalizerNode:
    """ROS adapter of :class:`Panorama` and :class:`PanoramaMatcher`.

    Subscribed topics:
        ``scan`` (sensor_msgs/LaserScan): while the state is ``LOST``, each scan's finite
        returns (every ``~beam_step``-th beam) are placed in ``~odom_frame`` through tf at
        the scan's stamp. ``map`` (nav_msgs/OccupancyGrid, latched): the map matched against.
        ``<state_namespace>/state`` (std_msgs/String, via StateClient).

    Published topics:
        ``initialpose`` (geometry_msgs/PoseWithCovarianceStamped): a fix, in ``~map_frame``,
        stamped with the last scan of the panorama (amcl integrates odometry since), with
        ``~sigma_xy`` and ``~sigma_yaw``.

    Parameters: the fields of :class:`PanoramaConfig` (``~cell`` 0.1 m, ``~headings`` 72,
    ``~sigma`` 0.2 m, ``~keep`` 0.9, ``~alone_xy`` 1.0 m, ``~alone_yaw`` 0.35 rad,
    ``~min_score`` 0.5, ``~min_points`` 100, ``~max_range`` 6.0 m, ``~clearance`` 0.18 m,
    ``~fixes`` 2, ``~sigma_xy`` 0.25 m, ``~sigma_yaw`` 0.1 rad, ``~beam_step`` 8,
    ``~map_frame`` map, ``~odom_frame`` odom, ``~base_frame`` base_footprint,
    ``~tf_timeout`` 0.1 s, ``~state_namespace`` /lost_service).
    """

    def __init__(self, config):
        """Keep the config; ROS connections are made by :meth:`start`."""
        self._config = config
        self._covariance = initialpose_covariance(config.sigma_xy, config.sigma_yaw)
        self._panorama = Panorama(config.cell)
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._matcher = None
        self._matcher_map = None        # the map message the matcher was made of
        self._refused = None            # the map message no matcher could be made of
        self._map = None
        self._state = None
        self._episode = 0               # counts lost episodes: a match of an old one is dropped
        self._fixes = 0                 # fixes published in this episode
        self._busy = False              # a match runs
        self._last_stamp = None
        self._tf_buffer = None
        self._tf_listener = None
        self._state_client = None
        self._pub = None

    def start(self):
        """Start tf, the state client, the publisher and then the subscribers."""
        self._tf_buffer = tf2_ros.Buffer()
        self._tf_listener = tf2_ros.TransformListener(self._tf_buffer)
        self._state_client = StateClient(self._config.state_namespace,
                                         on_change=self._on_state)
        self._pub = rospy.Publisher('initialpose', PoseWithCovarianceStamped, queue_size=1)
        rospy.Subscriber('map', OccupancyGrid, self._on_map, queue_size=1)
        rospy.Subscriber('scan', LaserScan, self._on_scan, queue_size=5)

    def _on_map(self, msg):
        """Keep a new map and make its matcher now, not in the first lost episode."""
        with self._lock:
            self._map = msg
        try:
            self._matcher_of(msg)
        except Exception as error:  # noqa: B902 - a bad map must not end the node
            rospy.logerr('%s: no panorama fixes on this map: %r', rospy.get_name(), error)

    def _on_state(self, state):
        """A new robot state: a new lost episode starts with no returns."""
        with self._lock:
            before, self._state = self._state, state
            if state == State.FLYING or state in LOCALIZED or (
                    state == State.LOST and before not in (State.LOST, State.LOCALIZING)):
                if len(self._panorama) or self._fixes:
                    rospy.loginfo('%s: state %s: forgetting %d returns', rospy.get_name(),
                                  state.value, len(self._panorama))
                self._panorama.clear()
                self._episode += 1
                self._fixes = 0

    def _on_scan(self, msg):
        try:
            self._handle(msg)
        except Exception as error:  # noqa: B902 - a callback must never die on bad input
            rospy.logerr_throttle(_THROTTLE, '%s: error handling a scan: %r' % (
                rospy.get_name(), error))

    def _handle(self, msg):
        """Gather the scan's returns while LOST; start a match after a full turn."""
        config = self._config
        stamp = msg.header.stamp.to_sec()
        with self._lock:
            if self._last_stamp is not None and stamp < self._last_stamp - _CLOCK_JUMP:
                rospy.logwarn('%s: the clock jumped back %.1f s: forgetting %d returns',
                              rospy.get_name(), self._last_stamp - stamp,
                              len(self._panorama))
                self._panorama.clear()
            self._last_stamp = stamp
            if self._state != State.LOST or self._fixes >= config.fixes:
                return
        laser = self._lookup(config.odom_frame, msg.header.frame_id, msg.header.stamp)
        base = self._lookup(config.odom_frame, config.base_frame, msg.header.stamp)
        if laser is None or base is None:
            return
        ranges = np.asarray(msg.ranges, dtype=float)
        angles = msg.angle_min + msg.angle_increment * np.arange(ranges.size)
        step = config.beam_step
        ranges, angles = ranges[::step], angles[::step]
        ok = np.isfinite(ranges) & (ranges >= msg.range_min) & (ranges <= msg.range_max)
        x, y, yaw = planar(laser)
        # an upside-down laser turns the other way
        sense = 1.0 if laser[2, 2] >= 0.0 else -1.0
        beams = yaw + sense * angles
        with self._lock:
            if self._state != State.LOST:
                return
            self._panorama.add(x + ranges[ok] * np.cos(beams[ok]),
                               y + ranges[ok] * np.sin(beams[ok]))
            if angles.size:
                self._panorama.look(beams[0], beams[-1])
            if self._busy or not self._panorama.looked_round() or self._map is None:
                return
            pose = planar(base)
            points = self._panorama.around(pose, config.max_range)
            self._panorama.clear()
            job = (self._episode, self._map, points, pose, msg.header.stamp)
            self._busy = True
        threading.Thread(target=self._match, args=job, daemon=True).start()

    def _lookup(self, target, source, stamp):
        """4x4 transform target <- source at ``stamp``, or None (logged)."""
        try:
            stamped = self._tf_buffer.lookup_transform(
                target, source, stamp, rospy.Duration(self._config.tf_timeout))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException, tf2_ros.InvalidArgumentException) as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: no transform %s <- %s: %s' % (
                rospy.get_name(), target, source, error))
            return None
        matrix = transform_to_matrix(stamped.transform)
        return matrix if np.all(np.isfinite(matrix)) else None

    def _match(self, episode, map_msg, points, odom_pose, stamp):
        """In the worker: match, and publish the fix when it stands alone and the episode
        is still the one the returns came from."""
        try:
            matcher = self._matcher_of(map_msg)
            if matcher is None:
                return
            started = time.monotonic()
            match = matcher.match(points)
            seconds = time.monotonic() - started
            if match is None:
                rospy.loginfo('%s: a full turn, but only %d returns within %.1f m (%d needed): '
                              'no match', rospy.get_name(), len(points),
                              self._config.max_range, self._config.min_points)
                return
            with self._lock:
                current = episode == self._episode and self._state == State.LOST
                fix = match.is_fix(self._config) and current and \
                    self._fixes < self._config.fixes
                if fix:
                    self._fixes += 1
            x, y, yaw = match.pose
            what = 'fix' if fix else ('no fix: %s' % (
                'the episode is over' if not current else
                'its score is below min_score %.2f' % self._config.min_score if match.alone
                else '%d rival places score within %.0f %% of it' % (
                    match.rivals, 100.0 * (1.0 - self._config.keep))))
            rospy.loginfo('%s: %d returns matched in %.1f s: best place x=%.2f y=%.2f '
                          'yaw=%.2f, score %.2f: %s', rospy.get_name(), match.points,
                          seconds, x, y, yaw, match.score, what)
            if fix:
                self._pub.publish(pose_with_covariance(x, y, yaw, self._covariance,
                                                       self._config.map_frame, stamp))
        except Exception as error:  # noqa: B902 - a bad map or match must not end the node
            rospy.logerr_throttle(_THROTTLE, '%s: panorama match failed: %r' % (
                rospy.get_name(), error))
        finally:
            with self._lock:
                self._busy = False

    def _matcher_of(self, map_msg):
        """The matcher of ``map_msg`` (made once per map; None, logged once, when the map
        cannot have one)."""
        with self._build_lock:      # the map's thread and a match's
            return self._build(map_msg)

    def _build(self, map_msg):
        if self._matcher_map is map_msg:
            return self._matcher
        if self._refused is map_msg:
            return None
        frame = map_msg.header.frame_id.lstrip('/')
        if frame and frame != self._config.map_frame.lstrip('/'):
            rospy.logwarn('%s: the map is in frame %r, not map_frame %r: its fixes are '
                          'published in %r', rospy.get_name(), frame, self._config.map_frame,
                          self._config.map_frame)
        started = time.monotonic()
        try:
            matcher = PanoramaMatcher(distance_map_from_msg(map_msg), self._config)
        except ValueError as error:
            self._refused = map_msg
            rospy.logerr('%s: no panorama fixes on this map: %s', rospy.get_name(), error)
            return None
        self._matcher, self._matcher_map = matcher, map_msg
        rospy.loginfo('%s: map %d x %d: %d places of %.2f m to match (%.1f s of wall time)',
                      rospy.get_name(), map_msg.info.width, map_msg.info.height,
                      int(matcher.places.sum()), matcher.cell, time.monotonic() - started)
        return matcher


def main():
    """Run the panorama_localizer node."""
    rospy.init_node('panorama_localizer')
    config = load_config(PanoramaConfig)
    node = PanoramaLocalizerNode(config)
    node.start()
    rospy.loginfo('%s: matching a full turn\'s returns against the map while LOST (at most '
                  '%d fixes per lost episode)', rospy.get_name(), config.fixes)
    rospy.spin()
