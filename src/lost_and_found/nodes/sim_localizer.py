"""The sim_localizer node: an amcl stand-in around lost_and_found.sim.particle_filter."""
import math
import sys
import threading
import time

import numpy as np
import rospy
import tf2_ros
from geometry_msgs.msg import (Pose, PoseArray, PoseWithCovarianceStamped, TransformStamped)
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan
from std_srvs.srv import Empty, EmptyResponse

from lost_and_found.nodes.conversions import lookup_waiting, pose_with_covariance, \
    quaternion_from_yaw
from lost_and_found.nodes.params import load_config
from lost_and_found.sim.gridmap import MapError, load_map
from lost_and_found.sim.particle_filter import ParticleFilter, Scan, SimLocalizerConfig
from lost_and_found.sim.robot import compose_pose

#: Seconds between repeats of the same warning about bad input.
WARN_PERIOD = 5.0
#: Shortest interval between two particlecloud messages (s, sim time).
CLOUD_PERIOD = 0.5
#: How long a scan waits for odom->base at its stamp (s, like amcl's message filter).
ODOM_TIMEOUT = 0.1
#: How long the first scan of a laser frame waits for base->laser (s).
LASER_TIMEOUT = 1.0
#: A scan stamp this far (s) behind the previous one means the clock was reset (a new run).
CLOCK_RESET = 1.0


def yaw_of_quaternion(q):
    """Yaw (rad) of a geometry_msgs/Quaternion (normalised first).

    Raises:
        ValueError: a non-finite or zero quaternion.
    """
    values = (q.x, q.y, q.z, q.w)
    norm = math.sqrt(sum(v * v for v in values))
    if not all(math.isfinite(v) for v in values) or norm < 1e-9:
        raise ValueError('bad quaternion %r' % (values,))
    x, y, z, w = (v / norm for v in values)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def invert2d(a):
    """The inverse of a 2D pose (x, y, yaw)."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return (-c * a[0] - s * a[1], s * a[0] - c * a[1], -a[2])


def transform_to_pose2d(transform):
    """(x, y, yaw) of a geometry_msgs/Transform (z, roll and pitch ignored)."""
    t = transform.translation
    pose = (t.x, t.y, yaw_of_quaternion(transform.rotation))
    if not all(math.isfinite(v) for v in pose):
        raise ValueError('non-finite transform %r' % (pose,))
    return pose


def initial_pose_from_msg(msg):
    """(x, y, yaw, 3x3 covariance) of a geometry_msgs/PoseWithCovarianceStamped.

    Raises:
        ValueError: non-finite values or a covariance with negative variances.
    """
    p = msg.pose.pose
    cov = msg.pose.covariance
    x, y, yaw = p.position.x, p.position.y, yaw_of_quaternion(p.orientation)
    # x-y block and the yaw variance (index 35), as amcl reads them.
    c3 = np.array([[cov[0], cov[1], 0.0], [cov[6], cov[7], 0.0], [0.0, 0.0, cov[35]]])
    if not all(math.isfinite(v) for v in (x, y, yaw)) or not np.all(np.isfinite(c3)):
        raise ValueError('initial pose or covariance is not finite')
    if c3[0, 0] < 0 or c3[1, 1] < 0 or c3[2, 2] < 0:
        raise ValueError('initial pose covariance has a negative variance')
    return x, y, yaw, c3


def estimate_msg(estimate, stamp, frame_id):
    """A geometry_msgs/PoseWithCovarianceStamped of a particle filter estimate."""
    return pose_with_covariance(estimate.x, estimate.y, estimate.yaw,
                                np.asarray(estimate.covariance).ravel(), frame_id, stamp)


def cloud_msg(pf, stamp, frame_id):
    """A geometry_msgs/PoseArray of every particle."""
    msg = PoseArray()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    half = pf.yaw / 2.0
    for x, y, s, c in zip(pf.x.tolist(), pf.y.tolist(), np.sin(half).tolist(),
                          np.cos(half).tolist()):
        pose = Pose()
        pose.position.x, pose.position.y = x, y
        pose.orientation.z, pose.orientation.w = s, c
        msg.poses.append(pose)
    return msg


def occupancy_grid_msg(grid, frame_id, stamp):
    """A nav_msgs/OccupancyGrid of a :class:`GridMap`: 100 occupied, 0 free, -1 unknown."""
    msg = OccupancyGrid()
    msg.header.frame_id = frame_id
    msg.header.stamp = stamp
    msg.info.map_load_time = stamp
    msg.info.resolution = grid.resolution
    msg.info.height, msg.info.width = grid.shape
    msg.info.origin.position.x, msg.info.origin.position.y = grid.origin[0], grid.origin[1]
    msg.info.origin.orientation = quaternion_from_yaw(grid.origin[2])
    values = np.full(grid.shape, -1, dtype=np.int8)
    values[grid.free] = 0
    values[grid.occupied] = 100
    msg.data = values.ravel().tolist()
    return msg


class SimLocalizerNode:
    """amcl's ROS interface around a :class:`ParticleFilter`.

    ROS API:
        Subscribed topics:
            ``scan`` (sensor_msgs/LaserScan): the laser; odometry comes from tf
            ``odom_frame_id`` -> ``base_frame_id`` at the scan stamp, the laser's mounting
            from tf ``base_frame_id`` -> scan frame (looked up once per frame).
            ``initialpose`` (geometry_msgs/PoseWithCovarianceStamped): re-seed the filter
            (Gaussian); must be in ``global_frame_id`` (or have an empty frame).
        Published topics:
            ``amcl_pose`` (geometry_msgs/PoseWithCovarianceStamped, latched): the estimate,
            only after a filter update that resampled or was forced (first scan after start,
            ``initialpose`` or ``global_localization``), stamped with the scan's stamp.
            ``particlecloud`` (geometry_msgs/PoseArray, latched): the particles, after an
            update, at most every 0.5 s.
            ``map`` (nav_msgs/OccupancyGrid, latched): the map, once at start, when
            ``~publish_map`` (map_server's job on a real robot).
            tf ``global_frame_id`` -> ``odom_frame_id``: re-broadcast at ``tf_publish_rate``,
            stamped now + ``transform_tolerance``.
        Services:
            ``global_localization`` (std_srvs/Empty): spread the particles over the free map.
            ``request_nomotion_update`` (std_srvs/Empty): update on the next scan.
        Parameters:
            ``~map_file`` (the real amcl takes the ``map`` topic instead) and amcl's names:
            see :class:`SimLocalizerConfig` and config/sim_localizer.yaml.

    Args:
        pf: the core :class:`ParticleFilter`.
        config: its :class:`SimLocalizerConfig`.
    """

    def __init__(self, pf, config, grid=None):
        """Keep the filter (and the map ``grid`` to publish); nothing talks to ROS yet."""
        self._pf = pf
        self._config = config
        self._grid = grid
        # Scan, initialpose, services and the tf timer run on different threads.
        self._lock = threading.Lock()
        self._map_odom = None
        self._last_stamp = None
        self._last_cloud = None
        self._last_tf = None
        self._laser_poses = {}
        self._warned_at = {}
        self._buffer = None
        self._broadcaster = None
        self._pose_pub = None
        self._cloud_pub = None
        self._map_pub = None
        self._handles = []

    def start(self):
        """Create tf, publishers, subscribers, services and the tf timer."""
        c = self._config
        self._buffer = tf2_ros.Buffer(cache_time=rospy.Duration(30.0))
        self._handles.append(tf2_ros.TransformListener(self._buffer))
        self._broadcaster = tf2_ros.TransformBroadcaster()
        self._pose_pub = rospy.Publisher('amcl_pose', PoseWithCovarianceStamped,
                                         queue_size=2, latch=True)
        self._cloud_pub = rospy.Publisher('particlecloud', PoseArray, queue_size=2,
                                          latch=True)
        if c.publish_map and self._grid is not None:
            self._map_pub = rospy.Publisher('map', OccupancyGrid, queue_size=1, latch=True)
            self._map_pub.publish(occupancy_grid_msg(self._grid, c.global_frame_id,
                                                     rospy.Time.now()))
        self._handles += [
            rospy.Subscriber('scan', LaserScan, self.on_scan, queue_size=5),
            rospy.Subscriber('initialpose', PoseWithCovarianceStamped, self.on_initial_pose,
                             queue_size=2),
            rospy.Service('global_localization', Empty, self.on_global_localization),
            rospy.Service('request_nomotion_update', Empty, self.on_nomotion_update),
            rospy.Timer(rospy.Duration(1.0 / c.tf_publish_rate), self.on_timer, reset=True),
        ]
        rospy.loginfo('%s: %d particles at (%.2f, %.2f, %.2f); waiting for %s and tf %s -> %s',
                      rospy.get_name(), self._pf.count, c.initial_pose_x, c.initial_pose_y,
                      c.initial_pose_a, rospy.resolve_name('scan'), c.odom_frame_id,
                      c.base_frame_id)

    def _warn(self, kind, text):
        """logwarn ``text`` at most once per WARN_PERIOD for each kind of problem."""
        now = time.monotonic()
        if now - self._warned_at.get(kind, -math.inf) >= WARN_PERIOD:
            self._warned_at[kind] = now
            rospy.logwarn('%s: %s', rospy.get_name(), text)

    def _laser_pose(self, frame_id):
        """The (static) pose of the laser frame in the base frame, looked up once."""
        if frame_id not in self._laser_poses:
            t = lookup_waiting(self._buffer, self._config.base_frame_id, frame_id,
                               rospy.Time(0), LASER_TIMEOUT)
            self._laser_poses[frame_id] = transform_to_pose2d(t.transform)
            rospy.loginfo('%s: laser %s at (%.3f, %.3f, %.3f) in %s', rospy.get_name(),
                          frame_id, *self._laser_poses[frame_id], self._config.base_frame_id)
        return self._laser_poses[frame_id]

    def _check_stamp(self, stamp):
        """False for an out-of-order scan; a big jump back (a new sim run) clears tf."""
        last = self._last_stamp
        if last is not None and stamp <= last:
            if last - stamp > CLOCK_RESET:
                self._warn('clock', 'scan stamp jumped back from %.3f to %.3f s; clock reset, '
                           'clearing tf' % (last, stamp))
                self._buffer.clear()
                with self._lock:
                    self._last_tf = None
            else:
                self._warn('order', 'skipping a scan stamped %.3f, not after %.3f'
                           % (stamp, last))
                return False
        self._last_stamp = stamp
        return True

    def on_scan(self, msg):
        """Offer one scan to the filter; publish the estimate after an update."""
        try:
            self._handle_scan(msg)
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException, tf2_ros.TimeoutException) as error:
            self._warn('tf', 'no odometry for the scan at %.3f: %s'
                       % (msg.header.stamp.to_sec(), error))
        except ValueError as error:
            self._warn('scan', 'skipping a scan: %s' % error)

    def _handle_scan(self, msg):
        stamp = msg.header.stamp
        if not self._check_stamp(stamp.to_sec()):
            return
        laser = self._laser_pose(msg.header.frame_id)
        t = lookup_waiting(self._buffer, self._config.odom_frame_id,
                           self._config.base_frame_id, stamp, ODOM_TIMEOUT)
        odom = transform_to_pose2d(t.transform)
        scan = Scan(np.asarray(msg.ranges, dtype=float), msg.angle_min, msg.angle_increment,
                    msg.range_min, msg.range_max, laser)
        with self._lock:
            first = self._map_odom is None
            result = self._pf.update(odom, scan)
            if not result.publish:
                return
            estimate = self._pf.estimate()
            self._map_odom = compose_pose((estimate.x, estimate.y, estimate.yaw),
                                          invert2d(odom))
            cloud = None
            if self._last_cloud is None or (stamp - self._last_cloud).to_sec() >= CLOUD_PERIOD \
                    or stamp < self._last_cloud:
                self._last_cloud = stamp
                cloud = cloud_msg(self._pf, stamp, self._config.global_frame_id)
            count = self._pf.count
        self._pose_pub.publish(estimate_msg(estimate, stamp, self._config.global_frame_id))
        if cloud is not None:
            self._cloud_pub.publish(cloud)
        self._send_tf()
        if first:
            rospy.loginfo('%s: first estimate (%.2f, %.2f, %.2f) with %d particles',
                          rospy.get_name(), estimate.x, estimate.y, estimate.yaw, count)

    def on_initial_pose(self, msg):
        """Re-seed the filter around a pose in the global frame (amcl's initialpose)."""
        frame = msg.header.frame_id.lstrip('/')
        if frame and frame != self._config.global_frame_id:
            self._warn('initialpose-frame', 'ignoring an initial pose in frame %r; it must be '
                       'in %r' % (msg.header.frame_id, self._config.global_frame_id))
            return
        try:
            x, y, yaw, cov = initial_pose_from_msg(msg)
            # Like amcl: the pose is where the robot was at the message's stamp; carry it
            # along the odometry since then (a fiducial fix arrives after the robot moved on).
            x, y, yaw = compose_pose((x, y, yaw), self._motion_since(msg.header.stamp))
            with self._lock:
                self._pf.initialize(x, y, yaw, cov)
        except ValueError as error:
            self._warn('initialpose', 'ignoring an initial pose: %s' % error)
            return
        rospy.loginfo('%s: initial pose (%.2f, %.2f, %.2f), sigma xy (%.2f, %.2f) m, '
                      'yaw %.2f rad', rospy.get_name(), x, y, yaw, math.sqrt(cov[0, 0]),
                      math.sqrt(cov[1, 1]), math.sqrt(cov[2, 2]))

    def _motion_since(self, stamp):
        """The base's odometry motion (x, y, yaw in the base frame) from ``stamp`` to now.

        Zero when the stamp is zero or the odometry at either time is unknown (warned).
        """
        if stamp.is_zero():
            return (0.0, 0.0, 0.0)
        odom, base = self._config.odom_frame_id, self._config.base_frame_id
        try:
            then = lookup_waiting(self._buffer, odom, base, stamp, ODOM_TIMEOUT)
            now = self._buffer.lookup_transform(odom, base, rospy.Time(0))
            return compose_pose(invert2d(transform_to_pose2d(then.transform)),
                                transform_to_pose2d(now.transform))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException,
                tf2_ros.ExtrapolationException, ValueError) as error:
            self._warn('initialpose-odom', 'initial pose taken as now: no odometry at its '
                       'stamp %.3f (%s)' % (stamp.to_sec(), error))
            return (0.0, 0.0, 0.0)

    def on_global_localization(self, _req):
        """Spread the particles uniformly over the free map (amcl's service)."""
        try:
            with self._lock:
                self._pf.global_localization()
            rospy.loginfo('%s: global localization: %d particles over the free map',
                          rospy.get_name(), self._pf.count)
        except ValueError as error:
            rospy.logerr('%s: global localization impossible: %s', rospy.get_name(), error)
        return EmptyResponse()

    def on_nomotion_update(self, _req):
        """Update on the next scan even without motion (amcl's service)."""
        with self._lock:
            self._pf.request_nomotion_update()
        rospy.loginfo('%s: update without motion requested', rospy.get_name())
        return EmptyResponse()

    def on_timer(self, _event):
        """Re-broadcast map->odom so that it never goes stale between filter updates."""
        try:
            self._send_tf()
        except rospy.ROSException as error:   # shutting down
            self._warn('tf-send', 'cannot broadcast %s -> %s: %s' % (
                self._config.global_frame_id, self._config.odom_frame_id, error))

    def _send_tf(self):
        """Broadcast the latest map->odom, future-dated by transform_tolerance (like amcl)."""
        stamp = rospy.Time.now() + rospy.Duration(self._config.transform_tolerance)
        with self._lock:
            map_odom = self._map_odom
            # tf2 rejects a second transform with the same stamp (the sim clock is discrete).
            if map_odom is None or (self._last_tf is not None and stamp <= self._last_tf):
                return
            self._last_tf = stamp
        t = TransformStamped()
        t.header.stamp = stamp
        t.header.frame_id = self._config.global_frame_id
        t.child_frame_id = self._config.odom_frame_id
        t.transform.translation.x, t.transform.translation.y = map_odom[0], map_odom[1]
        t.transform.rotation = quaternion_from_yaw(map_odom[2])
        self._broadcaster.sendTransform(t)


def main():
    """Run the sim_localizer node."""
    rospy.init_node('sim_localizer')
    config = load_config(SimLocalizerConfig)
    if not config.map_file:
        rospy.logfatal("%s: bad parameter map_file='': must name a map_server YAML",
                       rospy.get_name())
        sys.exit(1)
    try:
        grid = load_map(config.map_file)
    except MapError as error:
        rospy.logfatal('%s: bad parameter map_file=%r: %s', rospy.get_name(),
                       config.map_file, error)
        sys.exit(1)
    rng = np.random.default_rng(None if config.seed < 0 else config.seed)
    pf = ParticleFilter(config, grid, rng)
    node = SimLocalizerNode(pf, config, grid)
    node.start()
    rospy.spin()
