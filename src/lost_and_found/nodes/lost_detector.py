"""The lost_detector node: the rospy adapter around lost_and_found.core.lost_detector."""
import math
import threading
import time

import rospy
from geometry_msgs.msg import PoseWithCovarianceStamped
from std_msgs.msg import Empty, String

from lost_and_found.core.lost_detector import (
    CovarianceError, LostDetector, LostDetectorConfig, Tier, covariance_features, stamp_order)
from lost_and_found.nodes.params import load_config

#: Seconds between repeats of the same warning about bad input.
WARN_PERIOD = 5.0


def pose_features(msg):
    """The classifier features of a geometry_msgs/PoseWithCovarianceStamped.

    Raises:
        CovarianceError: the covariance cannot be classified (the message says why).
    """
    return covariance_features(msg.pose.covariance)


class LostDetectorNode:
    """Publishes how lost the robot is, from every amcl pose covariance.

    ROS API:
        Subscribed topics:
            ``laser_amcl_pose`` (geometry_msgs/PoseWithCovarianceStamped): amcl's pose; remap
            to ``amcl_pose`` on a TurtleBot2. One reading per message.
            ``~reset`` (std_msgs/Empty): forget every reading and return to ``normal``.
        Published topics:
            ``~status`` (std_msgs/String, latched): ``normal``, ``confused`` or ``lost``; once
            at start, after every valid reading and after every reset.
        Parameters:
            ``~modified_prob_classifier/{tier0_normal_prior, prob_thresh, slice_mu,
            slice_sigma}`` and ``~lost_detector/{queue_min, window_meta_tier2_lost,
            ratio_thresh_detections_tier2_lost, window_meta_tier0_normal}``: see
            :class:`LostDetectorConfig` and config/lost_detector.yaml.

    Args:
        detector: the core :class:`LostDetector`.
        config: its :class:`LostDetectorConfig`.
    """

    def __init__(self, detector, config):
        """Keep the core; nothing talks to ROS until :meth:`start`."""
        self._detector = detector
        self._config = config
        # Each subscription has its own callback thread; the core is not thread-safe.
        self._lock = threading.Lock()
        self._last_stamp = None
        self._status_pub = None
        self._subscribers = []
        self._warned_at = {}

    def start(self):
        """Advertise ``~status`` (publishing the initial ``normal``) and subscribe."""
        self._status_pub = rospy.Publisher('~status', String, queue_size=10, latch=True)
        self._status_pub.publish(String(data=self._detector.tier.status))
        self._subscribers = [
            rospy.Subscriber('laser_amcl_pose', PoseWithCovarianceStamped, self.on_pose,
                             queue_size=10),
            rospy.Subscriber('~reset', Empty, self.on_reset, queue_size=10),
        ]
        rospy.loginfo('%s: watching %s, status %s', rospy.get_name(),
                      rospy.resolve_name('laser_amcl_pose'), self._detector.tier.status)

    def on_pose(self, msg):
        """Classify one amcl pose and publish the tier; skip bad input with a warning."""
        try:
            features = pose_features(msg)
        except CovarianceError as error:
            self._warn(error.kind, '%s: skipping pose with a bad covariance: %s'
                       % (rospy.get_name(), error))
            return
        stamp = msg.header.stamp.to_sec()
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
            before = self._detector.tier
            try:
                tier = self._detector.update(features)
            except ValueError as error:
                self._warn('features', '%s: skipping pose: %s' % (rospy.get_name(), error))
                return
            probability = self._detector.last_probability
            self._status_pub.publish(String(data=tier.status))
        if tier != before:
            rospy.loginfo('%s: %s -> %s (sigma_xy %.3f m, sigma_theta %.3f rad, '
                          'P(lost) %.3f)', rospy.get_name(), before.status, tier.status,
                          features[0], features[1], probability)

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
            self._detector.reset()
            self._status_pub.publish(String(data=Tier.NORMAL.status))
        rospy.loginfo('%s: reset (%s -> normal)', rospy.get_name(), before.status)


def main():
    """Run the lost_detector node."""
    rospy.init_node('lost_detector')
    config = load_config(LostDetectorConfig)
    node = LostDetectorNode(LostDetector(config), config)
    node.start()
    rospy.spin()
