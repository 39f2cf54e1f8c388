"""The panorama_localizer node: a full turn's laser returns, matched against the map, ->
``initialpose`` while the robot is lost.

The matching and every rule of when to gather, match and publish are in
:mod:`lost_and_found.core.panorama` (:class:`PanoramaEpisodes`, :class:`PanoramaMatcher`);
this module looks the laser and the robot up in tf, runs a match in a worker thread, and
publishes the fix.
"""
import threading
import time
import zlib

import numpy as np
import rospy
import tf2_ros
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan

from lost_and_found.core.fiducial import initialpose_covariance
from lost_and_found.core.geometry import pose2d_from_matrix
from lost_and_found.core.panorama import PanoramaConfig, PanoramaEpisodes, PanoramaMatcher
from lost_and_found.nodes.conversions import distance_map_from_msg, lookup_matrix, \
    pose_with_covariance
from lost_and_found.nodes.params import load_config
from lost_and_found.state import StateClient

#: How often (s) a repeating problem (missing tf, a bad scan) is logged at most.
_THROTTLE = 10.0


def map_key(msg):
    """What tells two map messages apart: size, resolution, origin and a checksum of the
    cells (a map published again is not matched anew)."""
    info, origin = msg.info, msg.info.origin
    cells = np.asarray(msg.data, dtype=np.int8).tobytes() if len(msg.data) else b''
    return (info.width, info.height, info.resolution, origin.position.x, origin.position.y,
            origin.orientation.z, origin.orientation.w, zlib.crc32(cells))


class PanoramaLocalizerNode:
    """ROS adapter of :class:`PanoramaEpisodes` and :class:`PanoramaMatcher`.

    Subscribed topics:
        ``scan`` (sensor_msgs/LaserScan): while the state is ``LOST``, each scan's returns
        (every ``~beam_step``-th beam) are placed in ``~odom_frame`` through tf at the scan's
        stamp. ``map`` (nav_msgs/OccupancyGrid, latched): the map matched against.
        ``<state_namespace>/state`` (std_msgs/String, via StateClient).

    Published topics:
        ``initialpose`` (geometry_msgs/PoseWithCovarianceStamped): a fix, in ``~map_frame``,
        stamped with the last scan of the panorama (amcl integrates odometry since), with
        ``~sigma_xy`` and ``~sigma_yaw``.

    Parameters: the fields of :class:`PanoramaConfig` (``~cell`` 0.1 m, ``~headings`` 72,
    ``~sigma`` 0.2 m, ``~keep`` 0.9, ``~alone_xy`` 1.0 m, ``~alone_yaw`` 0.35 rad,
    ``~min_score`` 0.5, ``~min_points`` 100, ``~max_range`` 6.0 m, ``~clearance`` 0.18 m,
    ``~fixes`` 2, ``~sigma_xy`` 0.25 m, ``~sigma_yaw`` 0.1 rad, ``~partial_share`` 0.3,
    ``~partial_step`` 0.1, ``~beam_step`` 8, ``~map_frame`` map, ``~odom_frame`` odom,
    ``~base_frame`` base_footprint,
    ``~tf_timeout`` 0.1 s, ``~state_namespace`` lost_service).
    """

    def __init__(self, config):
        """Keep the config; ROS connections are made by :meth:`start`."""
        self._config = config
        self._covariance = initialpose_covariance(config.sigma_xy, config.sigma_yaw)
        self._episodes = PanoramaEpisodes(config)
        self._lock = threading.Lock()       # _episodes and _matcher
        self._build_lock = threading.Lock()
        self._matcher = None
        self._map_key = None                # the map the matcher, or the refusal, is of
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
        """Make the matcher of a new map now, not in the first lost episode; a map published
        again is kept, and one refused is refused once."""
        try:
            with self._build_lock:
                self._build(msg)
        except Exception as error:  # noqa: B902 - a bad map must not end the node
            rospy.logerr('%s: no panorama fixes on this map: %r', rospy.get_name(), error)

    def _build(self, msg):
        key = map_key(msg)
        if key == self._map_key:
            return
        self._map_key = key
        with self._lock:
            self._matcher = None        # no match against the old map from now on
        frame = msg.header.frame_id.lstrip('/')
        if frame and frame != self._config.map_frame:
            rospy.logwarn('%s: the map is in frame %r, not map_frame %r: its fixes are '
                          'published in %r', rospy.get_name(), frame, self._config.map_frame,
                          self._config.map_frame)
        started = time.monotonic()
        try:
            matcher = PanoramaMatcher(distance_map_from_msg(msg), self._config)
        except (ValueError, MemoryError) as error:
            rospy.logerr('%s: no panorama fixes on this map: %s', rospy.get_name(), error)
            return
        if abs(matcher.cell - self._config.cell) > 1e-6:
            rospy.logwarn('%s: cell %.3f m is no whole number of the map\'s %.3f m cells: '
                          'matching on %.3f m', rospy.get_name(), self._config.cell,
                          msg.info.resolution, matcher.cell)
        with self._lock:
            self._matcher = matcher
        rospy.loginfo('%s: map %d x %d: %d places of %.2f m to match (%.1f s of wall time)',
                      rospy.get_name(), msg.info.width, msg.info.height,
                      int(matcher.places.sum()), matcher.cell, time.monotonic() - started)

    def _on_state(self, state):
        with self._lock:
            forgotten = self._episodes.on_state(state)
        if forgotten:
            rospy.loginfo('%s: state %s: forgetting %d returns', rospy.get_name(),
                          state.value, forgotten)

    def _on_scan(self, msg):
        try:
            self._handle(msg)
        except Exception as error:  # noqa: B902 - a callback must never die on bad input
            rospy.logerr_throttle(_THROTTLE, '%s: error handling a scan: %r' % (
                rospy.get_name(), error))

    def _handle(self, msg):
        """Gather the scan's returns while LOST; start a match after a full turn (or a part,
        with ``~partial_share``)."""
        config = self._config
        with self._lock:
            strays = self._episodes.strays
            jumped = self._episodes.on_stamp(msg.header.stamp.to_sec(), rospy.get_time())
            stray = self._episodes.strays > strays
            episode = self._episodes.episode
            wanted = self._episodes.gathering() and not self._episodes.skip
        if stray:
            rospy.logwarn_throttle(_THROTTLE, '%s: a scan stamp more than %.1f s off the clock '
                                   '(this one or the one before): taken for a stray stamp, '
                                   'not a jump back'
                                   % (rospy.get_name(), self._episodes.clock_jump))
        if jumped is not None:
            rospy.logwarn('%s: the clock jumped back %.1f s: forgetting the returns',
                          rospy.get_name(), jumped)
        if not wanted:
            return
        laser = self._lookup(config.odom_frame, msg.header.frame_id, msg.header.stamp)
        base = self._lookup(config.odom_frame, config.base_frame, msg.header.stamp)
        if laser is None or base is None:
            return
        # an upside-down laser's angles turn the other way
        sense = 1.0 if laser[2, 2] >= 0.0 else -1.0
        count = len(msg.ranges)
        angles = msg.angle_min + msg.angle_increment * np.arange(0, count, config.beam_step)
        ranges = np.asarray(msg.ranges, dtype=float)[::config.beam_step]
        with self._lock:
            matcher = self._matcher
            job = self._episodes.add_scan(episode, pose2d_from_matrix(laser) + (sense,),
                                          pose2d_from_matrix(base),
                                          angles, ranges, msg.range_min, msg.range_max) \
                if matcher is not None else None
        if job is not None:
            self._start_match(matcher, msg.header.stamp, job)

    def _start_match(self, matcher, stamp, job):
        """Run :meth:`_match` of ``job`` (PanoramaEpisodes.add_scan's) in a worker thread: a
        match takes tens of milliseconds to a few tenths of a second, and scans keep coming."""
        try:
            threading.Thread(target=self._match, args=(matcher, stamp) + job,
                             daemon=True).start()
        except RuntimeError:
            with self._lock:
                self._episodes.finished(job[0], None)
            raise

    def _lookup(self, target, source, stamp):
        """4x4 transform target <- source at ``stamp``, or None (logged, or not finite)."""
        matrix = lookup_matrix(self._tf_buffer, target, source, stamp,
                               self._config.tf_timeout, _THROTTLE)
        return matrix if matrix is not None and np.all(np.isfinite(matrix)) else None

    def _match(self, matcher, stamp, episode, points, _base, share):
        """In the worker: match, and publish the fix the episode rules allow."""
        match = None
        try:
            started = time.monotonic()
            match = matcher.match(points)
            seconds = time.monotonic() - started
        except Exception as error:  # noqa: B902 - a bad match must not end the node
            rospy.logerr_throttle(_THROTTLE, '%s: panorama match failed: %r' % (
                rospy.get_name(), error))
        with self._lock:
            current = matcher is self._matcher
            fix, why = self._episodes.finished(episode, match if current else None,
                                               rospy.get_time())
            if fix:
                x, y, yaw = match.pose
                self._pub.publish(pose_with_covariance(x, y, yaw, self._covariance,
                                                       self._config.map_frame, stamp))
        if not current:
            rospy.loginfo('%s: a new map came during the match: no fix', rospy.get_name())
            return
        turn = 'a full turn' if share >= 1.0 else \
            'part of a turn (%.0f %% of the headings)' % (100.0 * share)
        if match is None:
            if len(points) < self._config.min_points:
                rospy.loginfo('%s: %s, but only %d returns within %.1f m (%d needed): no '
                              'match', rospy.get_name(), turn, len(points),
                              self._config.max_range, self._config.min_points)
            return
        x, y, yaw = match.pose
        rospy.loginfo('%s: %d returns of %s matched in %.1f s: best place x=%.2f y=%.2f '
                      'yaw=%.2f, score %.2f: %s', rospy.get_name(), match.points, turn,
                      seconds, x, y, yaw, match.score, 'fix' if fix else 'no fix: %s' % why)


def main():
    """Run the panorama_localizer node."""
    rospy.init_node('panorama_localizer')
    config = load_config(PanoramaConfig)
    node = PanoramaLocalizerNode(config)
    node.start()
    rospy.loginfo('%s: matching a full turn\'s returns against the map while LOST%s (at most '
                  '%d fixes per lost episode)', rospy.get_name(),
                  ', and parts of a turn from %.0f %% of the headings on' % (
                      100.0 * config.partial_share) if config.partial_share else '',
                  config.fixes)
    rospy.spin()
