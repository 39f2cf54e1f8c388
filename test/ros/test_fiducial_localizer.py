#!/usr/bin/env python3
"""rostest: fiducial_localizer publishes initialpose from a mapped tag while lost, and while
localized only when the tag contradicts the localizer.

The methods run in name order and form one scenario: the state starts IDLE with the localizer
(tf map -> base_footprint) agreeing with the tag (nothing may be published), then turns LOST
(a known tag gives the pose; an unknown one gives nothing), then NAVIGATING with the localizer
2 m off (the tag's pose is published) and right again (nothing). Starting in IDLE avoids
racing the node's view of the state: before it has received any state it does not publish
either. While LOST, a mapped tag too far away to localize from is published on
``~distant_tags`` for the search to approach, and (``coarse_fixes`` off in this instance)
gives no initialpose. A second instance with ``coarse_fixes`` on, as by default (publishing on
``/coarse/initialpose``), turns that tag into one coarse fix per lost episode.
"""
import math
import threading
import time
import unittest

import rospy
import rostest
import tf2_ros
from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray
from geometry_msgs.msg import PoseWithCovarianceStamped, TransformStamped
from std_msgs.msg import String
from ros_wait import wait_for

NAME = 'test_fiducial_localizer'
CAMERA_FRAME = 'camera_rgb_optical_frame'
#: Tag 8 of config/fiducials_example.yaml: at (2, 3, 0.3), its face toward +y.
TAG_ID = 8
#: Seen 2 m straight ahead by a camera 0.2 m ahead of the base: the base is at
#: (2, 3 + 2 + 0.2) heading -y.
EXPECTED = (2.0, 5.2, -math.pi / 2)
TOLERANCE = 1e-3


def fiducials(fiducial_id, distance=2.0):
    """A detection of ``fiducial_id`` ``distance`` m ahead, facing the camera (half a turn
    about x)."""
    ft = FiducialTransform(fiducial_id=fiducial_id, object_error=0.01, image_error=0.1,
                           fiducial_area=2000.0)
    ft.transform.translation.z = distance
    ft.transform.rotation.x = 1.0
    msg = FiducialTransformArray(transforms=[ft])
    msg.header.frame_id = CAMERA_FRAME
    msg.header.stamp = rospy.Time.now()
    return msg


def camera_and_estimate(pose):
    """The static transforms of the camera mount (0.2 m ahead of base_footprint, 0.3 m up)
    and of the localizer's estimate ``pose`` = (x, y, yaw) (map -> base_footprint)."""
    camera = TransformStamped()
    camera.header.stamp = rospy.Time.now()
    camera.header.frame_id = 'base_footprint'
    camera.child_frame_id = CAMERA_FRAME
    camera.transform.translation.x = 0.2
    camera.transform.translation.z = 0.3
    # Optical frame (z forward, x right, y down) on a REP 103 base.
    q = camera.transform.rotation
    q.x, q.y, q.z, q.w = -0.5, 0.5, -0.5, 0.5
    estimate = TransformStamped()
    estimate.header.stamp = camera.header.stamp
    estimate.header.frame_id = 'map'
    estimate.child_frame_id = 'base_footprint'
    estimate.transform.translation.x, estimate.transform.translation.y = pose[:2]
    estimate.transform.rotation.z = math.sin(pose[2] / 2.0)
    estimate.transform.rotation.w = math.cos(pose[2] / 2.0)
    return [camera, estimate]


class FiducialLocalizerTest(unittest.TestCase):
    """Plays camera, tf and lost_service around fiducial_localizer."""

    @classmethod
    def setUpClass(cls):
        """Publish the camera tf and an IDLE state; collect initialpose."""
        rospy.init_node(NAME)
        cls.lock = threading.Lock()
        cls.poses = []
        cls.sub = rospy.Subscriber('/initialpose', PoseWithCovarianceStamped, cls._record)
        cls.coarse = []
        cls.coarse_sub = rospy.Subscriber('/coarse/initialpose', PoseWithCovarianceStamped,
                                          cls._record_coarse)
        cls.distant = []
        cls.distant_sub = rospy.Subscriber('/fiducial_localizer/distant_tags',
                                           FiducialTransformArray, cls._record_distant)
        cls.state_pub = rospy.Publisher('/lost_service/state', String, queue_size=1,
                                        latch=True)
        cls.state_pub.publish(String(data='IDLE'))
        cls.fiducial_pub = rospy.Publisher('/fiducial_transforms', FiducialTransformArray,
                                           queue_size=1)
        cls.tf_broadcaster = tf2_ros.StaticTransformBroadcaster()
        cls.set_estimate(EXPECTED)

    @classmethod
    def set_estimate(cls, pose):
        """Latch the camera mount and the localizer's estimate ``pose`` (tf map -> base)."""
        cls.tf_broadcaster.sendTransform(camera_and_estimate(pose))

    @classmethod
    def _record(cls, msg):
        with cls.lock:
            cls.poses.append(msg)

    @classmethod
    def _record_coarse(cls, msg):
        with cls.lock:
            cls.coarse.append(msg)

    @classmethod
    def _record_distant(cls, msg):
        with cls.lock:
            cls.distant.append(msg)

    def count(self):
        """How many initialposes were received so far."""
        with self.lock:
            return len(self.poses)

    def publish_until(self, fiducial_id, predicate, timeout, distance=2.0):
        """Publish detections at 10 Hz until ``predicate()`` or ``timeout``; return the former.

        Detections are repeated, like a camera does, so that the first ones may arrive before
        the node has the camera tf without failing the test.
        """
        deadline = time.time() + timeout
        while time.time() < deadline and not rospy.is_shutdown():
            if predicate():
                return True
            self.fiducial_pub.publish(fiducials(fiducial_id, distance))
            time.sleep(0.1)
        return predicate()

    def wait_for(self, predicate, timeout, what):
        """Poll ``predicate``; fail the test if it is not true within ``timeout`` s."""
        wait_for(predicate, timeout, what)

    def test_0_connected(self):
        """The node subscribes to the detections, the state and publishes initialpose."""
        self.wait_for(lambda: self.fiducial_pub.get_num_connections() > 0
                      and self.state_pub.get_num_connections() > 0
                      and self.sub.get_num_connections() > 0, 20.0,
                      'fiducial_localizer to connect')

    def test_1_idle_publishes_nothing(self):
        """In IDLE a known tag that agrees with the localizer must not reset amcl: no
        initialpose within 2 s."""
        self.assertFalse(self.publish_until(TAG_ID, lambda: self.count() > 0, 2.0),
                         'initialpose published while IDLE')

    def test_2_lost_publishes_the_pose(self):
        """In LOST a known tag gives initialpose at the expected pose, tight covariance."""
        self.state_pub.publish(String(data='LOST'))
        self.assertTrue(self.publish_until(TAG_ID, lambda: self.count() > 0, 10.0),
                        'no initialpose while LOST')
        with self.lock:
            msg = self.poses[0]
        self.assertEqual(msg.header.frame_id, 'map')
        pose = msg.pose.pose
        self.assertAlmostEqual(pose.position.x, EXPECTED[0], delta=TOLERANCE)
        self.assertAlmostEqual(pose.position.y, EXPECTED[1], delta=TOLERANCE)
        self.assertAlmostEqual(pose.position.z, 0.0, delta=TOLERANCE)
        q = pose.orientation
        self.assertAlmostEqual(q.x, 0.0, delta=TOLERANCE)
        self.assertAlmostEqual(q.y, 0.0, delta=TOLERANCE)
        yaw = 2.0 * math.atan2(q.z, q.w)
        self.assertAlmostEqual(math.remainder(yaw - EXPECTED[2], 2 * math.pi), 0.0,
                               delta=TOLERANCE)
        cov = msg.pose.covariance
        self.assertEqual(len(cov), 36)
        for index in range(36):
            # sigma_xy = sigma_yaw = 0.1: variances 0.01 on x (0), y (7) and yaw (35).
            want = 0.01 if index in (0, 7, 35) else 0.0
            self.assertAlmostEqual(cov[index], want, delta=1e-9, msg='covariance[%d]' % index)

    def test_3_unknown_id_publishes_nothing(self):
        """An unmapped tag gives nothing, even after min_interval has passed."""
        before = self.count()
        self.assertFalse(self.publish_until(99, lambda: self.count() > before, 2.0),
                         'initialpose published for an unknown fiducial')
        # The node is still alive and the gate open: the known tag works again.
        self.assertTrue(self.publish_until(TAG_ID, lambda: self.count() > before, 5.0),
                        'no initialpose for the known tag after the unknown one')

    def test_3b_a_distant_tag_is_published_for_the_search(self):
        """LOST, tag 8 seen 4 m away (max_distance is 3 m): no initialpose, but the detection
        on ~distant_tags, in the camera frame; an unknown tag 4 m away is not published."""
        self.state_pub.publish(String(data='LOST'))     # as test_2 left it; this test alone too
        before = self.count()
        with self.lock:
            self.distant.clear()
        self.publish_until(99, lambda: False, 1.5, distance=4.0)      # unknown: never
        self.assertTrue(self.publish_until(TAG_ID, lambda: len(self.distant) > 0, 10.0,
                                           distance=4.0), 'nothing on ~distant_tags')
        self.assertEqual(self.count(), before, 'initialpose from a tag 4 m away')
        with self.lock:
            msgs = list(self.distant)
        self.assertTrue(all([ft.fiducial_id for ft in msg.transforms] == [TAG_ID]
                            for msg in msgs), 'an unknown tag on ~distant_tags')
        self.assertEqual(msgs[0].header.frame_id, CAMERA_FRAME)
        self.assertAlmostEqual(msgs[0].transforms[0].transform.translation.z, 4.0)

    def test_4_a_tag_that_contradicts_the_localizer_corrects_it(self):
        """NAVIGATING with the localizer 2 m off: the tag's pose is published; with the
        localizer right again, nothing more."""
        self.set_estimate((EXPECTED[0] + 2.0, EXPECTED[1], EXPECTED[2]))
        self.state_pub.publish(String(data='NAVIGATING'))
        before = self.count()
        self.assertTrue(self.publish_until(TAG_ID, lambda: self.count() > before, 10.0),
                        'no initialpose for a tag 2 m from the localizer while NAVIGATING')
        with self.lock:
            pose = self.poses[-1].pose.pose
        self.assertAlmostEqual(pose.position.x, EXPECTED[0], delta=TOLERANCE)
        self.set_estimate(EXPECTED)
        # The tf update may take a moment to reach the node: once no initialpose came for
        # 2 s (min_interval is 1 s), none may come in the next 3 s either.
        self.wait_for(lambda: not self.publish_until(
            TAG_ID, lambda c=self.count(): self.count() > c, 2.0), 20.0,
            '2 s without initialpose once the localizer agrees')
        after = self.count()
        self.assertFalse(self.publish_until(TAG_ID, lambda: self.count() > after, 3.0),
                         'initialpose for a tag that agrees with the localizer')

    def coarse_count(self, sigma_xy=None):
        """How many poses the coarse instance published so far (with ``sigma_xy`` only those
        with that x standard deviation)."""
        with self.lock:
            return sum(1 for msg in self.coarse if sigma_xy is None
                       or abs(msg.pose.covariance[0] - sigma_xy ** 2) < 1e-9)

    def test_5_a_distant_tag_gives_one_coarse_fix_per_lost_episode(self):
        """With coarse_fixes: LOST, tag 8 seen 4 m away gives the pose 4.2 m north of it
        with the coarse covariance (0.3 m, 0.2 rad), once in the episode however long it
        stays in view; once the robot was localized (NAVIGATING), the next LOST episode gets
        another."""
        self.set_estimate(EXPECTED)
        self.state_pub.publish(String(data='LOST'))
        before = self.coarse_count(0.3)
        self.assertTrue(self.publish_until(TAG_ID, lambda: self.coarse_count(0.3) > before,
                                           10.0, distance=4.0), 'no coarse fix while LOST')
        with self.lock:
            msg = self.coarse[-1]
        pose = msg.pose.pose
        self.assertAlmostEqual(pose.position.x, 2.0, delta=TOLERANCE)
        self.assertAlmostEqual(pose.position.y, 7.2, delta=TOLERANCE)
        yaw = 2.0 * math.atan2(pose.orientation.z, pose.orientation.w)
        self.assertAlmostEqual(math.remainder(yaw + math.pi / 2, 2 * math.pi), 0.0,
                               delta=TOLERANCE)
        cov = msg.pose.covariance
        self.assertEqual([round(cov[i], 9) for i in (0, 7, 35)], [0.09, 0.09, 0.04])
        # Three times min_interval with the tag in view: no second coarse fix from it.
        self.assertFalse(self.publish_until(
            TAG_ID, lambda: self.coarse_count(0.3) > before + 1, 3.0, distance=4.0),
            'a second coarse fix from the same tag in one lost episode')
        # Localized: the estimate 2 m off while NAVIGATING makes the 2 m tag publish a
        # correction (tight covariance), which shows the node took the state.
        self.set_estimate((EXPECTED[0] + 2.0, EXPECTED[1], EXPECTED[2]))
        self.state_pub.publish(String(data='NAVIGATING'))
        tight = self.coarse_count(0.1)
        self.assertTrue(self.publish_until(TAG_ID, lambda: self.coarse_count(0.1) > tight,
                                           10.0), 'no correction while NAVIGATING')
        self.state_pub.publish(String(data='LOST'))
        self.assertTrue(self.publish_until(TAG_ID, lambda: self.coarse_count(0.3) > before + 1,
                                           10.0, distance=4.0),
                        'no coarse fix in the next lost episode')
        self.set_estimate(EXPECTED)


if __name__ == '__main__':
    rostest.rosrun('lost_and_found', NAME, FiducialLocalizerTest)
