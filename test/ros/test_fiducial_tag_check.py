#!/usr/bin/env python3
"""rostest: fiducial_localizer's tag check asks for LOST when, right after a localization no
tag confirmed, a tag the estimate puts in clear view is not detected; and not when it is.

The estimate puts tag 8 of config/fiducials_example.yaml 2 m straight ahead of the camera,
facing it, in an empty mapped room. The methods run in name order: each first makes the node
LOST (proven by the initialpose it publishes for a tag while LOST), then IDLE, which opens the
check; then the camera either sees nothing (a change_state request for LOST must come) or sees
the tag (none may come).
"""
import math
import threading
import time
import unittest

import rospy
import rostest
import tf2_ros
from fiducial_msgs.msg import FiducialTransformArray
from geometry_msgs.msg import Pose, PoseArray, PoseWithCovarianceStamped
from nav_msgs.msg import OccupancyGrid
from std_msgs.msg import String
from lost_and_found.msg import SearchHint
from lost_and_found.srv import ChangeState, ChangeStateResponse, GetViewpoint
from ros_wait import wait_for
from test_fiducial_localizer import EXPECTED, TAG_ID, camera_and_estimate, fiducials

NAME = 'test_fiducial_tag_check'


def room_map():
    """A latched-map message: 10 m x 10 m from (-2, -2) at 0.1 m, walls on its border."""
    size = 100
    msg = OccupancyGrid()
    msg.header.frame_id = 'map'
    msg.header.stamp = rospy.Time.now()
    msg.info.resolution = 0.1
    msg.info.width = msg.info.height = size
    msg.info.origin.position.x = msg.info.origin.position.y = -2.0
    msg.info.origin.orientation.w = 1.0
    cells = [0] * (size * size)
    for i in range(size):
        for row, col in ((0, i), (size - 1, i), (i, 0), (i, size - 1)):
            cells[row * size + col] = 100
    msg.data = cells
    return msg


def no_fiducials():
    """A camera frame without detections."""
    msg = fiducials(TAG_ID)
    msg.transforms = []
    return msg


class TagCheckTest(unittest.TestCase):
    """Plays camera, tf, map and lost_service around fiducial_localizer."""

    @classmethod
    def setUpClass(cls):
        """Camera tf and estimate (tag 8 in view), map, state IDLE, the change_state server."""
        rospy.init_node(NAME)
        cls.lock = threading.Lock()
        cls.poses = []
        cls.requests = []
        cls.failures = 0        # change_state requests still to fail (lost_service not answering)
        cls.sub = rospy.Subscriber('/initialpose', PoseWithCovarianceStamped, cls._record)
        cls.state_pub = rospy.Publisher('/lost_service/state', String, queue_size=1,
                                        latch=True)
        cls.state_pub.publish(String(data='IDLE'))
        cls.map_pub = rospy.Publisher('/map', OccupancyGrid, queue_size=1, latch=True)
        cls.map_pub.publish(room_map())
        cls.fiducial_pub = rospy.Publisher('/fiducial_transforms', FiducialTransformArray,
                                           queue_size=1)
        cls.server = rospy.Service('/lost_service/change_state', ChangeState, cls._serve)
        cls.tf_broadcaster = tf2_ros.StaticTransformBroadcaster()
        cls.tf_broadcaster.sendTransform(camera_and_estimate(EXPECTED))

    @classmethod
    def _record(cls, msg):
        with cls.lock:
            cls.poses.append(msg)

    @classmethod
    def _serve(cls, request):
        with cls.lock:
            cls.requests.append((request.state, request.reason, request.expected))
            if cls.failures > 0:
                cls.failures -= 1
                raise RuntimeError('lost_service fails to answer (played by the test)')
        return ChangeStateResponse(accepted=True, message='')

    def count(self, what):
        """How many initialposes ('poses') or change_state requests ('requests') so far."""
        with self.lock:
            return len(getattr(self, what))

    def play(self, make, predicate, timeout):
        """Publish ``make()`` at 10 Hz until ``predicate()`` or ``timeout``; return the former."""
        deadline = time.time() + timeout
        while time.time() < deadline and not rospy.is_shutdown():
            if predicate():
                return True
            self.fiducial_pub.publish(make())
            time.sleep(0.1)
        return predicate()

    def localize_without_a_tag(self):
        """LOST (proven by an initialpose for the tag), then IDLE: the check opens."""
        self.state_pub.publish(String(data='LOST'))
        before = self.count('poses')
        self.assertTrue(self.play(lambda: fiducials(TAG_ID),
                                  lambda: self.count('poses') > before, 10.0),
                        'no initialpose while LOST')
        self.state_pub.publish(String(data='IDLE'))

    def test_0_connected(self):
        """The node subscribes to the detections, the state and the map."""
        wait_for(lambda: self.fiducial_pub.get_num_connections() > 0
                 and self.state_pub.get_num_connections() > 0
                 and self.map_pub.get_num_connections() > 0
                 and self.sub.get_num_connections() > 0, 20.0,
                 'fiducial_localizer to connect')

    def test_1_a_missing_tag_refutes_the_localization(self):
        """The tag the estimate puts 2 m ahead stays undetected: LOST is requested, naming
        the tag, and only for a robot still localized."""
        self.localize_without_a_tag()
        self.assertTrue(self.play(no_fiducials, lambda: self.count('requests') > 0, 10.0),
                        'no change_state request while an expected tag was missing')
        with self.lock:
            state, reason, expected = self.requests[0]
        self.assertEqual(state, 'LOST')
        self.assertIn('tag %d' % TAG_ID, reason)
        # only while localized: not a fix that came meanwhile
        self.assertEqual(expected.split(), ['IDLE', 'NAVIGATING'])

    def test_2_a_seen_tag_confirms_it(self):
        """The camera sees the tag where the estimate says: no request, also once the tag is
        out of sight again (the agreeing tag closed the check)."""
        self.localize_without_a_tag()
        before = self.count('requests')
        self.assertFalse(self.play(lambda: fiducials(TAG_ID),
                                   lambda: self.count('requests') > before, 3.0),
                         'LOST requested while the expected tag was seen')
        self.assertFalse(self.play(no_fiducials, lambda: self.count('requests') > before, 3.0),
                         'LOST requested after an agreeing tag had confirmed the estimate')

    def test_2b_an_unanswered_refutation_is_asked_again(self):
        """lost_service fails to answer the request for LOST: it is asked again while the robot
        stays localized, and no more once it is not."""
        with self.lock:
            type(self).failures = 1
        self.localize_without_a_tag()
        before = self.count('requests')
        self.assertTrue(self.play(no_fiducials, lambda: self.count('requests') >= before + 2,
                                  10.0), 'an unanswered request for LOST was not asked again')
        with self.lock:
            again = self.requests[before:before + 2]
        self.assertEqual([state for state, _, _ in again], ['LOST', 'LOST'])
        self.assertEqual(again[0][1], again[1][1])      # the same refutation

        # Never answered, and meanwhile the robot is LOST: nothing left to ask for.
        with self.lock:
            type(self).failures = 1000
        self.localize_without_a_tag()
        before = self.count('requests')
        self.assertTrue(self.play(no_fiducials, lambda: self.count('requests') > before, 10.0),
                        'no change_state request while an expected tag was missing')
        try:
            self.state_pub.publish(String(data='LOST'))
            # The node has the new state once it publishes a fix for the tag (only while LOST),
            # from the same thread that asks: no request can be under way after that.
            fixes = self.count('poses')
            self.assertTrue(self.play(lambda: fiducials(TAG_ID),
                                      lambda: self.count('poses') > fixes, 10.0),
                            'no initialpose while LOST')
            settled = self.count('requests')
            # asked again 1 s after the first request and 2 s after the second while localized
            self.assertFalse(self.play(no_fiducials,
                                       lambda: self.count('requests') > settled, 3.0),
                             'LOST asked again for a robot that is no longer localized')
        finally:
            with self.lock:
                type(self).failures = 0
            self.state_pub.publish(String(data='IDLE'))

    def test_3_viewpoint(self):
        """~viewpoint: where the estimate already has tag 8 in view, there; facing away from
        it, the same place turned round; off the map, none."""
        rospy.wait_for_service('/fiducial_localizer/viewpoint', 10.0)
        viewpoint = rospy.ServiceProxy('/fiducial_localizer/viewpoint', GetViewpoint)
        try:
            # A camera frame names the camera's tf frame.
            self.assertTrue(self.play(no_fiducials, lambda: viewpoint().found, 10.0),
                            'no viewpoint where tag %d is in view' % TAG_ID)
            answer = viewpoint()
            self.assertEqual(answer.fiducial_id, TAG_ID)
            self.assertEqual(answer.path_length, 0.0)
            self.assertEqual(answer.pose.header.frame_id, 'map')
            position = answer.pose.pose.position
            self.assertAlmostEqual(position.x, EXPECTED[0], places=3)
            self.assertAlmostEqual(position.y, EXPECTED[1], places=3)
            self.assertAlmostEqual(answer.pose.pose.orientation.z, math.sin(EXPECTED[2] / 2),
                                   places=3)

            self.tf_broadcaster.sendTransform(camera_and_estimate(
                (EXPECTED[0], EXPECTED[1], EXPECTED[2] + math.pi)))
            self.assertTrue(self.play(no_fiducials, lambda: viewpoint().path_length == 0.0
                                      and abs(viewpoint().pose.pose.orientation.w) < 0.99
                                      and viewpoint().found, 10.0), viewpoint().message)
            answer = viewpoint()
            # Turned back to face the tag: yaw -pi/2 again (a half turn from the estimate).
            self.assertEqual(answer.fiducial_id, TAG_ID)
            self.assertAlmostEqual(answer.pose.pose.position.y, EXPECTED[1], places=3)
            self.assertAlmostEqual(abs(answer.pose.pose.orientation.z),
                                   abs(math.sin(EXPECTED[2] / 2)), places=2)

            self.tf_broadcaster.sendTransform(camera_and_estimate((30.0, 30.0, 0.0)))
            self.assertTrue(self.play(no_fiducials, lambda: not viewpoint().found, 10.0),
                            'a viewpoint for an estimate off the map')
            self.assertIn('no pose within', viewpoint().message)
        finally:
            self.tf_broadcaster.sendTransform(camera_and_estimate(EXPECTED))

    def test_4_search_hint(self):
        """~search_hint while LOST: particles around (-1, -1), all facing +x, are 2.5 m or more
        from any place that sees a tag; the nearest such places (tag 7's, at (3, 1) facing
        -x) lie ahead and to the left; the same cloud facing +y has them to the right."""
        hints = []
        sub = rospy.Subscriber('/fiducial_localizer/search_hint', SearchHint, hints.append)
        cloud_pub = rospy.Publisher('/particlecloud', PoseArray, queue_size=1, latch=True)
        try:
            self.state_pub.publish(String(data='LOST'))
            for yaw, low, high in ((0.0, 0.0, math.pi / 2), (math.pi / 2, -math.pi / 2, 0.0)):
                cloud = PoseArray()
                cloud.header.frame_id = 'map'
                cloud.header.stamp = rospy.Time.now()
                for i in range(50):
                    pose = Pose()
                    pose.position.x = -1.0 + 0.01 * (i % 7)
                    pose.position.y = -1.0 + 0.01 * (i % 5)
                    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
                    cloud.poses.append(pose)
                hints.clear()
                wait_for(lambda: self.publish_and_check(cloud_pub, cloud, hints), 15.0,
                         'a search hint for the cloud facing %.2f' % yaw, period=0.2)
                hint = [h for h in hints if h.header.stamp == cloud.header.stamp][-1]
                self.assertTrue(hint.found)
                self.assertEqual(hint.header.frame_id, 'base_footprint')
                self.assertTrue(low < hint.bearing < high, hint)
                self.assertGreater(hint.share, 0.9)
                self.assertEqual(hint.voters, 50)
        finally:
            sub.unregister()
            self.state_pub.publish(String(data='IDLE'))

    @staticmethod
    def publish_and_check(pub, cloud, hints):
        """Publish ``cloud`` (the node reads one a second) and say whether a hint for it came."""
        if any(h.header.stamp == cloud.header.stamp for h in hints):
            return True
        pub.publish(cloud)
        return False


if __name__ == '__main__':
    rostest.rosrun('lost_and_found', NAME, TagCheckTest)
