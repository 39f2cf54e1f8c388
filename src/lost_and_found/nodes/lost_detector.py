"""The lost_detector node: the rospy adapter around lost_and_found.core.lost_detector."""
import collections
import math
import threading
import time

import rospy
import tf2_ros
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan
from std_msgs.msg import Empty, Float64, String

from lost_and_found.core.lost_detector import (
    CovarianceError, CovarianceFitWatch, LostDetector, LostDetectorConfig, Tier,
    covariance_features, stamp_order)
from lost_and_found.core.scan_agreement import (
    NoReturnWatch, ScanChecker, through_share, weighted_miss)
from lost_and_found.core.strip_check import StripCheck
from lost_and_found.nodes.conversions import (
    distance_map_from_msg, planar_pose, scan_from_msg, yaw_from_quaternion)
from lost_and_found.nodes.laser_mounts import LaserMounts
from lost_and_found.nodes.params import load_config
from lost_and_found.nodes.shutdown import quiet_at_shutdown

#: Seconds between repeats of the same warning about bad input.
WARN_PERIOD = 5.0
#: Seconds between two info logs of the same kind of scan-check availability change.
REASON_PERIOD = 60.0
#: Seconds a scan's returns wait for the odometry of their stamp before the strip rule goes on
#: without them: tf may bring odom -> base for a scan's stamp a little after amcl's pose for
#: that scan (the two come on different connections).
STRIP_ODOM_WAIT = 0.5
#: With open beams on: scans with NaN readings (or finite ones below range_min) and no beam
#: without a return after which the node warns that the laser's driver seems to report no
#: return that way (10 s of a Kinect).
NAN_DRIVER_SCANS = 300
#: Scans rospy queues for the scan callback while another callback holds the node's lock:
#: 1 s of a Kinect at 30 Hz. The strip rule's whole-map search runs under that lock (20-35
#: ms on the development machine, several times more on a robot's older computer); a shorter
#: queue would drop the very scans amcl's next poses are paired with.
SCAN_QUEUE = 30


def pose_features(msg):
    """The classifier features of a geometry_msgs/PoseWithCovarianceStamped.

    Raises:
        CovarianceError: the covariance cannot be classified (the message says why).
    """
    return covariance_features(msg.pose.covariance)


def strip_text(config):
    """Rule 9 (``strip_check/*``) in words, for the start-up log."""
    if not config.strip_count:
        return 'no strip rule'
    return ('tier 2 on %d of %d readings whose last %g s of returns, placed by odometry, score '
            'at the estimate below %g of a place more than %g m away'
            % (config.strip_count, config.strip_readings, config.strip_window,
               config.strip_ratio, config.strip_min_distance))


def burst_text(config):
    """The burst rule (``scan_check/burst_*``) in words, for the start-up log."""
    if not config.burst_count:
        return 'no burst rule'
    return ('tier 2 on %d of %d readings with a through share above %g through walls more '
            'than %g m apart' % (config.burst_count, config.burst_window, config.burst_share,
                                 config.burst_min_span))


class LostDetectorNode:
    """Publishes how lost the robot is, from every amcl pose covariance.

    ROS API:
        Subscribed topics:
            ``laser_amcl_pose`` (geometry_msgs/PoseWithCovarianceStamped): amcl's pose; remap
            to ``amcl_pose`` on a TurtleBot2. One reading per message.
            ``~reset`` (std_msgs/Empty): forget every reading and return to ``normal``.
            ``scan`` (sensor_msgs/LaserScan) and ``map`` (nav_msgs/OccupancyGrid, latched):
            only with ``~scan_check/enabled``; the scan amcl integrated for a pose (same
            stamp) is placed on the map at that pose for the third feature.
        Required tf (with ``~scan_check/enabled``): ``~scan_check/base_frame`` -> the
            scan's frame (the laser mount; looked up once per laser frame); with
            ``~strip_check/count`` above 0 also ``~strip_check/odom_frame`` ->
            ``~scan_check/base_frame`` at each scan's stamp (the strip's odometry).
        Published topics:
            ``~status`` (std_msgs/String, latched): ``normal``, ``confused`` or ``lost``; once
            at start, after every valid reading and after every reset.
            ``~p_lost`` (std_msgs/Float64): P(lost) of every valid reading (under rule 0, the
            scan reading's whose lost still stands), after its status (lost_service's test for
            ending LOST, ``localized_max_p_lost``).
        Parameters:
            ``~modified_prob_classifier/{tier0_normal_prior, prob_thresh, slice_mu,
            slice_sigma}`` and ``~lost_detector/{queue_min, window_meta_tier2_lost,
            ratio_thresh_detections_tier2_lost, window_meta_tier0_normal, settle_readings}``,
            ``~modified_prob_classifier/{scan_miss_mu, scan_miss_sigma}`` and
            ``~scan_check/{enabled, base_frame, hit_tolerance, short_weight, min_range,
            open_beams, unmapped_ends, max_beams, min_beams, stamp_tolerance, hold_readings,
            through_lost, through_min_reach, burst_count, burst_window, burst_share,
            burst_min_span}`` and ``~strip_check/{count, readings, window, min_points,
            ratio, min_distance, slack_xy, slack_yaw, odom_frame}`` (rule 9, with the scan
            check only): see
            :class:`LostDetectorConfig` and config/lost_detector.yaml.

    Args:
        detector: the core :class:`LostDetector`.
        config: its :class:`LostDetectorConfig`.
    """

    def __init__(self, detector, config):
        """Keep the core; nothing talks to ROS until :meth:`start`."""
        self._detector = detector
        self._config = config
        self._checker = ScanChecker.from_config(config) if config.scan_check else None
        self._no_return = NoReturnWatch(NAN_DRIVER_SCANS) \
            if self._checker is not None and self._checker.open_beams else None
        self._mounts = LaserMounts(config.base_frame, None, 'for the scan check')
        self._strip = StripCheck.from_config(config) \
            if self._checker is not None and config.strip_count else None
        # Tells once when amcl's cloud is wider than the YAML expects while the scan agrees.
        self._fit_watch = CovarianceFitWatch(config) if self._checker is not None else None
        self._tf_buffer = None
        self._tf_listener = None
        self._scan_reason = None          # the kind of reason of the last reading ('' = ok)
        self._reason_logged_at = {}       # kind of reason -> when it was last logged
        self._pending = None              # (stamp, pose, features) of a pose awaiting its scan
        self._unplaced = collections.deque()    # (stamp, returns, estimate) awaiting odometry
        # Each subscription has its own callback thread; the core is not thread-safe.
        self._lock = threading.Lock()
        self._last_stamp = None
        self._status_pub = None
        self._p_lost_pub = None
        self._subscribers = []
        self._warned_at = {}

    def start(self):
        """Advertise ``~status`` (publishing the initial ``normal``) and subscribe."""
        self._status_pub = rospy.Publisher('~status', String, queue_size=10, latch=True)
        self._status_pub.publish(String(data=self._detector.tier.status))
        self._p_lost_pub = rospy.Publisher('~p_lost', Float64, queue_size=10)
        if self._checker is not None:
            self._tf_buffer = tf2_ros.Buffer()
            self._tf_listener = tf2_ros.TransformListener(self._tf_buffer)
            self._mounts.tf_buffer = self._tf_buffer
            self._subscribers += [
                rospy.Subscriber('map', OccupancyGrid, quiet_at_shutdown(self.on_map),
                                 queue_size=1),
                rospy.Subscriber('scan', LaserScan, quiet_at_shutdown(self.on_scan),
                                 queue_size=SCAN_QUEUE),
            ]
        self._subscribers += [
            rospy.Subscriber('laser_amcl_pose', PoseWithCovarianceStamped,
                             quiet_at_shutdown(self.on_pose), queue_size=10),
            rospy.Subscriber('~reset', Empty, quiet_at_shutdown(self.on_reset), queue_size=10),
        ]
        checker = self._checker
        if checker is None and self._config.strip_count:
            rospy.logwarn('%s: strip_check/count is %d but the scan check is off: the strip '
                          'rule (rule 9) needs the scans and the map, and is off too',
                          rospy.get_name(), self._config.strip_count)
        rospy.loginfo('%s: watching %s%s, status %s; after a start or reset the first %d '
                      'readings are judged by the scan alone', rospy.get_name(),
                      rospy.resolve_name('laser_amcl_pose'),
                      ' with %s on %s (short misses count %g, returns from %g m, open beams %s, '
                      'beams that end in unmapped space %s, lost on a through share above %s, '
                      '%s)'
                      % (rospy.resolve_name('scan'), rospy.resolve_name('map'),
                         checker.short_weight, checker.min_range,
                         'used' if checker.open_beams else 'not used',
                         'left out' if checker.unmapped_ends else 'used',
                         '%g' % self._config.through_lost if self._config.through_lost < 1.0
                         else 'never (off)', burst_text(self._config) + ', ' +
                         strip_text(self._config))
                      if checker is not None else ' (scan check off)',
                      self._detector.tier.status, self._config.settle_readings)

    def on_map(self, msg):
        """Take a new map for the scan feature; keep the old one when it is unusable."""
        try:
            distance_map = distance_map_from_msg(msg)
        except ValueError as error:
            self._warn('map', '%s: ignoring a map: %s' % (rospy.get_name(), error))
            return
        matcher = None
        if self._strip is not None:
            try:
                matcher = self._strip.build_matcher(distance_map)
            except ValueError as error:
                self._warn('strip_map', '%s: the strip rule cannot search this map (%s): it '
                           'gives no verdict until a map it can' % (rospy.get_name(), error))
        with self._lock:
            self._checker.distance_map = distance_map
            if self._strip is not None:
                self._strip.matcher = matcher
        rospy.loginfo('%s: map %d x %d at %.3f m (%d occupied cells) for the scan check',
                      rospy.get_name(), distance_map.shape[1], distance_map.shape[0],
                      distance_map.resolution, distance_map.occupied_cells)

    def on_scan(self, msg):
        """Keep a scan (with its laser mount) for the pose amcl will compute from it."""
        mount = self._mounts.get(msg.header.frame_id)
        if mount is None:
            return
        scan = scan_from_msg(msg)
        warning = None
        with self._lock:
            if self._no_return is not None:
                warning = self._no_return.add(scan)
            self._checker.add_scan(msg.header.stamp.to_sec(), scan, mount)
            if self._pending is not None:
                self._try_pending()
        if warning:
            rospy.logwarn('%s: %s', rospy.get_name(), warning)

    def _classify(self, features, fractions, span=None, strip=None):
        """Update the detector with one reading and publish its tier. Call with the lock held.

        ``fractions``: the (through, short) miss fractions of the reading's scan, or None;
        ``span``: its through span (``scan_check/burst_count`` only), or None; ``strip``: its
        strip verdict (``strip_check/count`` only), or None.
        """
        if self._checker is not None:
            self._log_scan_reason()
        miss = through = None
        if fractions is not None:
            miss = weighted_miss(fractions[0], fractions[1], self._checker.short_weight)
            through = through_share(fractions[0], fractions[1],
                                    self._config.through_min_reach)
        before, settling = self._detector.tier, self._detector.settling
        try:
            tier = self._detector.update(features + (miss,), through, span, strip)
        except ValueError as error:
            self._warn('features', '%s: skipping pose: %s' % (rospy.get_name(), error))
            return
        self._status_pub.publish(String(data=tier.status))
        if self._fit_watch is not None and not settling:   # settling: the fix's covariance
            advice = self._fit_watch.add(features, miss)
            if advice:
                rospy.logwarn('%s: %s', rospy.get_name(), advice)
        if self._detector.p_lost is not None:
            self._p_lost_pub.publish(Float64(data=self._detector.p_lost))
        if tier != before:
            rospy.loginfo('%s: %s -> %s (sigma_xy %.3f m, sigma_theta %.3f rad, scan miss %s, '
                          'through share %s, P(lost) %.3f%s)', rospy.get_name(), before.status,
                          tier.status, features[0], features[1],
                          'n/a' if miss is None else '%.2f' % miss,
                          'n/a' if through is None else '%.2f' % through,
                          self._detector.last_probability,
                          ', settling: the scan alone' if settling else '')
            if strip and self._strip.last is not None and self._strip.last[1] is not None:
                score, best, place = self._strip.last
                rospy.loginfo('%s: this reading\'s strip is low: the last %g s of returns '
                              'score %.2f at the estimate, %.2f at (%.2f, %.2f, %.2f)',
                              rospy.get_name(), self._strip.window, score, best, *place)

    def _log_scan_reason(self):
        """Log when the scan feature becomes available or unavailable, and why.

        Each kind of reason (its first words, not the stamp it names) is logged at info level
        at most once per REASON_PERIOD: near walls the feature comes and goes every few
        readings, and that is not news.
        """
        reason = self._checker.reason
        kind = ' '.join(reason.split(' ')[:2])
        if kind != self._scan_reason:
            now = time.monotonic()
            if now - self._reason_logged_at.get(kind, -math.inf) >= REASON_PERIOD:
                self._reason_logged_at[kind] = now
                if reason:
                    rospy.loginfo('%s: scan check unavailable (%s): covariance only',
                                  rospy.get_name(), reason)
                else:
                    rospy.loginfo('%s: scan check active', rospy.get_name())
            else:
                rospy.logdebug('%s: scan check %s', rospy.get_name(),
                               'unavailable: %s' % reason if reason else 'active')
        self._scan_reason = kind

    def _try_pending(self):
        """Classify the held pose once its scan is in, or once it cannot come any more.

        Call with the lock held.
        """
        stamp, pose, features = self._pending
        span = None
        try:
            if self._config.burst_count:        # the burst rule needs the span too: one pass
                values = self._checker.measure_with_span(stamp, pose)
                fractions, span = (None, None) if values is None else (values[:2], values[2])
            else:
                fractions = self._checker.measure(stamp, pose)
        except (ValueError, FloatingPointError) as error:
            # Never again for this pose: its reading counts on the covariance alone.
            self._warn('scan_error', '%s: the scan check failed (%s): covariance only'
                       % (rospy.get_name(), error))
            self._pending = None
            self._classify(features, None)
            return
        if fractions is None and self._checker.waiting:
            return
        self._pending = None
        self._classify(features, fractions, span, self._strip_verdict(stamp, pose))

    def _strip_verdict(self, stamp, pose):
        """Add the scan of the reading at ``stamp`` (amcl's estimate ``pose``) to the strip
        and return a strip verdict (True, False) for this reading, or None: rule 9 off, no
        scan for it, no odometry for any waiting scan yet (:meth:`_place_scans`), a strip too
        short, no usable map. When this scan still waits for odometry but an earlier one came
        in, the verdict is the newest placed reading's, at its own estimate: odometry that
        always comes a little after amcl's pose leaves rule 9 one reading late, not off.
        Call with the lock held."""
        if self._strip is None:
            return None
        returns = self._checker.returns_at(stamp)
        if returns is None:
            return None
        if self._unplaced and stamp < self._unplaced[-1][0]:
            self._unplaced.clear()      # the clock went back (the strip forgets too)
        self._unplaced.append((stamp, returns, pose))
        try:
            placed = self._place_scans()
            if placed is None or self._detector.settling:
                return None         # rule 9 does not read a settling one: no search for nothing
            return self._strip.verdict(*placed)
        except (ValueError, FloatingPointError) as error:
            self._warn('strip_error', '%s: the strip rule failed (%s): no verdict'
                       % (rospy.get_name(), error))
            return None

    def _place_scans(self):
        """Add the scans waiting for odometry to the strip, oldest first, as far as tf has
        odometry for their stamps; ``(stamp, odom, estimate)`` of the last one added, or None.

        A scan without odometry waits, and every later one with it (the strip takes them in
        order), until a scan :data:`STRIP_ODOM_WAIT` s newer has come; then the strip goes on
        without it, with a warning.

        Raises:
            ValueError: odometry or a stamp that is not finite (that scan is left out).
        """
        placed = None
        while self._unplaced:
            stamp, returns, estimate = self._unplaced[0]
            try:
                t = self._tf_buffer.lookup_transform(self._config.odom_frame,
                                                     self._config.base_frame,
                                                     rospy.Time.from_sec(stamp))
            except tf2_ros.TransformException as error:
                if self._unplaced[-1][0] - stamp < STRIP_ODOM_WAIT:
                    break
                self._unplaced.popleft()
                self._warn('strip_odom', '%s: no odometry (%s -> %s) at a scan\'s stamp for '
                           'the strip rule within %g s: %s'
                           % (rospy.get_name(), self._config.odom_frame,
                              self._config.base_frame, STRIP_ODOM_WAIT, error))
                continue
            self._unplaced.popleft()
            odom = planar_pose(t.transform)
            self._strip.add(stamp, odom, returns)
            placed = (stamp, odom, estimate)
        return placed

    def on_pose(self, msg):
        """Classify one amcl pose and publish the tier; skip bad input with a warning.

        With the scan check on, a pose whose scan has not arrived yet is held until that scan
        (or a later one, or the next pose) comes.
        """
        try:
            features = pose_features(msg)
        except CovarianceError as error:
            self._warn(error.kind, '%s: skipping pose with a bad covariance: %s'
                       % (rospy.get_name(), error))
            return
        stamp = msg.header.stamp.to_sec()
        p = msg.pose.pose
        pose = (p.position.x, p.position.y, yaw_from_quaternion(p.orientation))
        if not all(math.isfinite(v) for v in pose):
            self._warn('pose', '%s: skipping a pose that is not finite (x %r, y %r, yaw %r)'
                       % (rospy.get_name(), *pose))
            return
        with self._lock:
            order = stamp_order(self._last_stamp, stamp)
            if order == 'duplicate':
                self._warn('duplicate', '%s: skipping a pose stamped %.3f again '
                           '(already counted)' % (rospy.get_name(), stamp))
                return
            if order == 'backwards':
                self._warn('backwards', '%s: pose stamp went back from %.3f to %.3f '
                           '(clock jump?); classifying it anyway'
                           % (rospy.get_name(), self._last_stamp, stamp))
            self._last_stamp = stamp
            if self._checker is None:
                self._classify(features, None)
                return
            if self._pending is not None:
                # Its scan never came before the next pose: covariance only.
                held = self._pending
                self._pending = None
                try:
                    self._checker.feature(held[0], held[1])     # for the reason it logs
                except (ValueError, FloatingPointError):
                    pass    # a scan that cannot be checked: covariance only, as it is
                self._classify(held[2], None)
            self._pending = (stamp, pose, features)
            self._try_pending()

    def _warn(self, kind, text):
        """logwarn ``text`` at most once per WARN_PERIOD for each kind of problem.

        rospy.logwarn_throttle throttles per call site, which would let a NaN warning hide a
        different problem (say, an asymmetric covariance) reported from the same line.
        """
        now = time.monotonic()
        if now - self._warned_at.get(kind, -math.inf) >= WARN_PERIOD:
            self._warned_at[kind] = now
            rospy.logwarn(text)

    def on_reset(self, _msg):
        """Empty the detector's queue and publish ``normal``."""
        with self._lock:
            before = self._detector.tier
            self._pending = None
            self._detector.reset()
            if self._strip is not None:
                self._strip.clear()
                self._unplaced.clear()
            self._status_pub.publish(String(data=Tier.NORMAL.status))
        rospy.loginfo('%s: reset (%s -> normal)', rospy.get_name(), before.status)


def main():
    """Run the lost_detector node."""
    rospy.init_node('lost_detector')
    config = load_config(LostDetectorConfig)
    node = LostDetectorNode(LostDetector(config), config)
    node.start()
    rospy.spin()
