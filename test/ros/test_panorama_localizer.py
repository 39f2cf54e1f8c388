#!/usr/bin/env python3
"""rostest: panorama_localizer, after the laser has looked all the way round while LOST,
publishes on initialpose where in the map the robot is.

The map is a 10 m x 6 m room with three boxes that make no turn of it look like another. The
robot stands at a pose of the map the node is not told, and odometry starts at zero there; it
turns in place, and each scan is what the laser would see from the true pose. The fix must
come from panorama_localizer and lie within its published sigma_xy (0.25 m) and 0.1 rad of
the truth at its stamp.
Then the map becomes the same room without its boxes, which looks the same half a turn round:
a new lost episode's full turn must be matched and refused for its rival places.
"""
import math
import threading
import unittest

import numpy as np
import rospy
import rostest
import tf2_ros
from geometry_msgs.msg import PoseWithCovarianceStamped, TransformStamped
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import LaserScan
from rosgraph_msgs.msg import Log
from std_msgs.msg import String

from lost_and_found.nodes.conversions import yaw_from_quaternion
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.laser import cast_rays
from ros_wait import wait_for

NAME = 'test_panorama_localizer'
RES = 0.05
ORIGIN = (-1.0, -1.0)
#: Where the robot stands (map frame); the node is told nothing of it.
TRUTH = (6.3, 3.4, 2.2)
#: The laser's place on the robot (base_footprint -> base_laser_link), a Kinect's.
LASER_X = 0.1
#: Beams of one scan over the laser's field of view (rad), and its range (m).
BEAMS, HALF_FOV, RANGE_MAX = 160, 0.5, 5.0
#: Turned between two scans (rad).
STEP = 0.25


def room(boxes=True):
    """Occupied cells of the room (rows bottom-up), with its boxes or bare."""
    occupied = np.zeros((int(6.0 / RES), int(10.0 / RES)), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    for x0, y0, x1, y1 in ((2.0, 4.0, 3.0, 5.5), (5.0, 0.5, 5.5, 3.0),
                           (8.0, 4.5, 9.5, 5.0)) if boxes else ():
        occupied[int(y0 / RES):int(y1 / RES), int(x0 / RES):int(x1 / RES)] = True
    return occupied


def map_msg(occupied):
    msg = OccupancyGrid()
    msg.header.frame_id = 'map'
    msg.header.stamp = rospy.Time.now()
    msg.info.resolution = RES
    msg.info.height, msg.info.width = occupied.shape
    msg.info.origin.position.x, msg.info.origin.position.y = ORIGIN
    msg.info.origin.orientation.w = 1.0
    msg.data = np.where(occupied, 100, 0).astype(np.int8).ravel().tolist()
    return msg


def transform(parent, child, x, y, yaw, stamp):
    out = TransformStamped()
    out.header.frame_id, out.child_frame_id, out.header.stamp = parent, child, stamp
    out.transform.translation.x, out.transform.translation.y = x, y
    out.transform.rotation.z, out.transform.rotation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return out


class PanoramaLocalizerTest(unittest.TestCase):
    """Plays map, state, tf and laser around panorama_localizer."""

    @classmethod
    def setUpClass(cls):
        rospy.init_node(NAME)
        cls.lock = threading.Lock()
        cls.fixes = []
        cls.logs = []
        cls.occupied = room()
        cls.grid = GridMap.from_occupancy(cls.occupied, RES, ORIGIN + (0.0,))
        rospy.Subscriber('/initialpose', PoseWithCovarianceStamped, cls._record)
        rospy.Subscriber('/rosout', Log, cls._log, queue_size=1000)
        cls.state_pub = rospy.Publisher('/lost_service/state', String, queue_size=1,
                                        latch=True)
        cls.map_pub = rospy.Publisher('/map', OccupancyGrid, queue_size=1, latch=True)
        cls.scan_pub = rospy.Publisher('/scan', LaserScan, queue_size=10)
        cls.static = tf2_ros.StaticTransformBroadcaster()
        cls.static.sendTransform(transform('base_footprint', 'base_laser_link', LASER_X, 0.0,
                                           0.0, rospy.Time.now()))
        cls.tf = tf2_ros.TransformBroadcaster()

    @classmethod
    def _record(cls, msg):
        if msg._connection_header.get('callerid') == '/panorama_localizer':
            with cls.lock:
                cls.fixes.append(msg)

    @classmethod
    def _log(cls, msg):
        if msg.name == '/panorama_localizer':
            with cls.lock:
                cls.logs.append(msg.msg)

    def turn(self, until):
        """Turn in place, a scan every STEP, until ``until()`` holds (or six turns); the
        stamp (ns) of each scan -> how far the robot had turned."""
        rate = rospy.Rate(10)
        turned, sent = 0.0, {}
        while not rospy.is_shutdown() and turned < 12.0 * math.pi and not until():
            stamp = rospy.Time.now()
            self.tf.sendTransform(transform('odom', 'base_footprint', 0.0, 0.0, turned, stamp))
            self.scan_pub.publish(self.scan(turned, stamp))
            sent[stamp.to_nsec()] = turned
            turned += STEP
            rate.sleep()
        return sent

    def scan(self, turned, stamp):
        """The scan of the laser with the robot at TRUTH turned by ``turned``."""
        yaw = TRUTH[2] + turned
        x, y = TRUTH[0] + LASER_X * math.cos(yaw), TRUTH[1] + LASER_X * math.sin(yaw)
        angles = np.linspace(-HALF_FOV, HALF_FOV, BEAMS)
        ranges = cast_rays(self.grid, x, y, yaw + angles, RANGE_MAX)
        msg = LaserScan()
        msg.header.frame_id, msg.header.stamp = 'base_laser_link', stamp
        msg.angle_min, msg.angle_max = -HALF_FOV, HALF_FOV
        msg.angle_increment = 2.0 * HALF_FOV / (BEAMS - 1)
        msg.range_min, msg.range_max = 0.45, RANGE_MAX
        msg.ranges = [r if r < RANGE_MAX else math.inf for r in ranges.tolist()]
        return msg

    def test_a_full_turn_while_lost_gives_a_fix_at_the_truth(self):
        self.map_pub.publish(map_msg(self.occupied))
        self.state_pub.publish(String(data='LOST'))
        wait_for(lambda: self.scan_pub.get_num_connections() > 0, 20, 'the node on /scan')
        # Until a fix comes: a full turn is 2 pi / STEP scans; the map's matcher may still
        # be in the making for the first ones.
        sent = self.turn(lambda: self.copy(self.fixes))
        wait_for(lambda: self.copy(self.fixes), 20, 'a fix from panorama_localizer')
        fix = self.copy(self.fixes)[0]
        self.assertEqual(fix.header.frame_id, 'map')
        # The fix is stamped with the last scan it matched: the truth then is TRUTH turned
        # as far as the robot had turned for that scan.
        self.assertIn(fix.header.stamp.to_nsec(), sent)
        truth_yaw = TRUTH[2] + sent[fix.header.stamp.to_nsec()]
        cov = fix.pose.covariance
        self.assertAlmostEqual(cov[0], 0.25 ** 2)
        self.assertAlmostEqual(cov[35], 0.1 ** 2)
        # Within the fix's own sigma_xy (0.25 m): which scans a part of a turn gathers depends
        # on when the node had the map and the state, and one such part matches 0.22 m off
        # (a place two search cells away scores higher for it); a wrong place is metres off.
        p = fix.pose.pose
        yaw = yaw_from_quaternion(p.orientation)
        self.assertLess(math.hypot(p.position.x - TRUTH[0], p.position.y - TRUTH[1]),
                        math.sqrt(cov[0]), 'fix (%.2f, %.2f) against the truth (%.2f, %.2f)'
                        % (p.position.x, p.position.y, TRUTH[0], TRUTH[1]))
        self.assertLess(abs(math.remainder(yaw - truth_yaw, 2.0 * math.pi)), 0.1)

    def test_b_a_room_like_its_half_turn_gives_no_fix(self):
        self.occupied = room(boxes=False)
        self.grid = GridMap.from_occupancy(self.occupied, RES, ORIGIN + (0.0,))
        self.map_pub.publish(map_msg(self.occupied))
        wait_for(lambda: sum('places of' in m for m in self.copy(self.logs)) >= 2, 20,
                 'the matcher of the bare room')
        fixes = len(self.copy(self.fixes))
        # A new lost episode: its returns are of the bare room only (the state client
        # queues both, in order).
        self.state_pub.publish(String(data='IDLE'))
        self.state_pub.publish(String(data='LOST'))

        def refused():
            return any('no fix' in m and 'rival' in m for m in self.copy(self.logs))
        self.turn(refused)
        wait_for(refused, 20, 'a match refused for its rivals')
        self.assertEqual(len(self.copy(self.fixes)), fixes)

    def copy(self, items):
        with self.lock:
            return list(items)


if __name__ == '__main__':
    rostest.rosrun('lost_and_found', NAME, PanoramaLocalizerTest)
