#!/usr/bin/env python3
"""rostest: lost_detector's /lost_detector/status follows a covariance ramp.

Every valid ``laser_amcl_pose`` message yields exactly one status message, so the test publishes
one reading at a time and waits for its status (no sleeps). The phase lengths come from the
node's parameters, so the test stays valid when the YAML is recalibrated.
"""
import math
import threading
import time
import unittest

import rospy
import rostest
from geometry_msgs.msg import PoseWithCovarianceStamped
from std_msgs.msg import Empty, Float64, String

PKG = 'lost_and_found'
TIMEOUT = 10.0

#: (sigma_xy [m], sigma_theta [rad]) of amcl tracking, of a growing spread, and right after
#: global_localization.
TIGHT = (0.08, 0.05)
GROWING = [(0.15, 0.1), (0.3, 0.2), (0.5, 0.4), (0.8, 0.6), (1.2, 0.9)]
HUGE = (5.0, 1.8)


def covariance(sigma_xy, sigma_theta, angle=0.6):
    """An amcl-like covariance: an x-y ellipse (major sigma_xy, minor half) rotated by angle."""
    major, minor = sigma_xy ** 2, (sigma_xy / 2) ** 2
    c, s = math.cos(angle), math.sin(angle)
    xx = c * c * major + s * s * minor
    yy = s * s * major + c * c * minor
    xy = c * s * (major - minor)
    cov = [0.0] * 36
    cov[0], cov[1], cov[6], cov[7], cov[35] = xx, xy, xy, yy, sigma_theta ** 2
    return cov


class LostDetectorRampTest(unittest.TestCase):
    """Drives /lost_detector through normal -> confused -> lost -> normal."""

    def setUp(self):
        rospy.init_node('test_lost_detector', anonymous=True)
        # Notified on every status; wait_for also re-checks at 20 Hz for other conditions.
        self.lock = threading.Condition()
        self.statuses = []
        self.sub = rospy.Subscriber('/lost_detector/status', String, self.on_status)
        self.p_lost = []
        self.p_sub = rospy.Subscriber('/lost_detector/p_lost', Float64, self.on_p_lost)
        self.pose_pub = rospy.Publisher('laser_amcl_pose', PoseWithCovarianceStamped,
                                        queue_size=100)
        self.reset_pub = rospy.Publisher('/lost_detector/reset', Empty, queue_size=1)
        params = rospy.get_param('/lost_detector/lost_detector')
        self.window = params['window_meta_tier2_lost']
        self.queue_min = params['queue_min']
        self.tier0_window = params['window_meta_tier0_normal']
        self.settle_readings = params.get('settle_readings', 0)
        # The latched initial status, then both publishers connected.
        self.wait_for(lambda: self.count() >= 1, 'the initial latched status')
        self.assertEqual(self.statuses[0], 'normal')
        self.wait_for(lambda: self.pose_pub.get_num_connections() > 0, 'pose subscriber')
        self.wait_for(lambda: self.reset_pub.get_num_connections() > 0, 'reset subscriber')

    def on_status(self, msg):
        with self.lock:
            self.statuses.append(msg.data)
            self.lock.notify_all()

    def on_p_lost(self, msg):
        with self.lock:
            self.p_lost.append(msg.data)
            self.lock.notify_all()

    def count(self):
        with self.lock:
            return len(self.statuses)

    def wait_for(self, predicate, what, timeout=TIMEOUT):
        """Poll ``predicate`` at 20 Hz; fail the test if it is not true within ``timeout``."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if rospy.is_shutdown() or time.monotonic() > deadline:
                self.fail('timed out after %.0f s waiting for %s' % (timeout, what))
            with self.lock:
                self.lock.wait(0.05)

    def publish_cov(self, cov):
        msg = PoseWithCovarianceStamped()
        msg.header.stamp = rospy.Time.now()
        msg.header.frame_id = 'map'
        msg.pose.pose.orientation.w = 1.0
        msg.pose.covariance = cov
        self.pose_pub.publish(msg)

    def reading(self, features):
        """Publish one reading and return the status it produced."""
        before = self.count()
        self.publish_cov(covariance(*features))
        self.wait_for(lambda: self.count() > before, 'status for reading %r' % (features,))
        with self.lock:
            self.assertEqual(len(self.statuses), before + 1, self.statuses[before:])
            return self.statuses[before]

    def until(self, features, status, limit):
        """Publish ``features`` until ``status`` comes back; return the statuses seen."""
        seen = []
        for _ in range(limit):
            seen.append(self.reading(features))
            if seen[-1] == status:
                return seen
        self.fail('no %r after %d readings of %r: %s' % (status, limit, features, seen))

    def settle(self):
        """The readings after a start or reset that the scan alone judges: without a map here
        there is no scan feature, so each is counted and otherwise ignored, huge or not."""
        seen = [self.reading(HUGE) for _ in range(self.settle_readings)]
        self.assertLessEqual(set(seen), {'normal'}, seen)

    def test_ramp_invalid_input_and_reset(self):
        self.settle()
        seen = []
        # Tight readings fill the tier-2 window with normals.
        for _ in range(max(self.window, self.queue_min)):
            seen.append(self.reading(TIGHT))
        self.assertEqual(set(seen), {'normal'})
        # Growing spread: the first lost-looking reading is confused (1 of window); lost comes
        # only once the window's lost ratio crosses the threshold, which a long calibrated
        # window may not reach within the ramp (confused is accepted then).
        for features in GROWING:
            seen.append(self.reading(features))
        self.assertEqual(next(s for s in seen if s != 'normal'), 'confused', seen)
        self.assertIn(seen[-1], ('confused', 'lost'))

        # Invalid covariances in the middle: skipped, no status, node keeps classifying.
        nan = covariance(*HUGE)
        nan[7] = float('nan')
        asymmetric = covariance(*HUGE)
        asymmetric[1] += 0.5
        before = self.count()
        self.publish_cov(nan)
        self.publish_cov(asymmetric)
        # confused or lost, depending on the calibrated window and ratio threshold; either way
        # exactly one status, for the valid reading.
        self.assertIn(self.reading(GROWING[-1]), ('confused', 'lost'))
        self.assertEqual(self.count(), before + 1)

        # Huge (just after global_localization): the lost ratio crosses the threshold.
        seen.append(self.statuses[-1])
        if seen[-1] != 'lost':
            seen += self.until(HUGE, 'lost', self.window + 1)
        # Sticky: one fewer than window_meta_tier0_normal tight readings keep it lost ...
        for _ in range(self.tier0_window - 1):
            seen.append(self.reading(TIGHT))
        self.assertEqual(seen[-1], 'lost')
        # ... and the next one resets it.
        seen.append(self.reading(TIGHT))
        self.assertEqual(seen[-1], 'normal')
        edges = [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]
        self.assertEqual(edges, ['normal', 'confused', 'lost', 'normal'])

        # ~reset: back to lost, then reset returns normal, also on the next reading.
        self.until(HUGE, 'lost', self.window + self.queue_min)
        before = self.count()
        self.reset_pub.publish(Empty())
        self.wait_for(lambda: self.count() > before, 'status after ~reset')
        self.assertEqual(self.statuses[-1], 'normal')
        # Without the reset this would still be lost (sticky); with it the queue is empty, so
        # a huge reading is gated to normal (a tight one when queue_min is 1).
        self.assertEqual(self.reading(HUGE if self.queue_min > 1 else TIGHT), 'normal')

    def test_zz_p_lost_follows_every_reading(self):
        # (runs after the ramp: unittest orders methods by name). The ramp's last P(lost) may
        # still reach this test's subscriber (rospy shares the connection), so each step waits
        # for the latest value to match its reading: low, high, low again.
        self.wait_for(lambda: self.p_sub.get_num_connections() > 0, 'p_lost publisher')
        before = self.count()
        self.reset_pub.publish(Empty())
        self.wait_for(lambda: self.count() > before, 'status after ~reset')
        with self.lock:
            settling = len(self.p_lost)
        self.settle()
        with self.lock:       # nothing classified while settling without a scan
            self.assertEqual(len(self.p_lost), settling)

        def latest_is(lost, before):
            with self.lock:
                return len(self.p_lost) > before and (self.p_lost[-1] > 0.5) == lost
        for features, lost in ((TIGHT, False), (HUGE, True), (TIGHT, False)):
            with self.lock:
                before = len(self.p_lost)
            self.reading(features)
            self.wait_for(lambda: latest_is(lost, before),
                          'P(lost) %s 0.5 for %r' % ('>' if lost else '<=', features))


if __name__ == '__main__':
    rostest.rosrun(PKG, 'lost_detector_ramp', LostDetectorRampTest)
