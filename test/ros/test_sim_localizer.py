#!/usr/bin/env python3
"""rostest: sim_localizer behaves like amcl on its ROS interface.

The script plays the simulator: it writes a generated room as a map_server map, starts the
node on it, and publishes /clock, tf odom -> base_footprint, a static laser offset and scans
cast from the true pose. Checks: one forced amcl_pose after the first scan (amcl's
force_publication), none while standing still, one after request_nomotion_update, one after
moving past update_min_d (stamped after the motion), map -> odom on tf and the particle
cloud, and a huge covariance after global_localization.
"""
import math
import os
import shutil
import tempfile
import threading
import time
import unittest

import numpy as np
import roslaunch
import rospy
import rostest
import tf2_ros
from geometry_msgs.msg import PoseArray, PoseWithCovarianceStamped, TransformStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import LaserScan
from std_srvs.srv import Empty

from lost_and_found.nodes.conversions import yaw_from_quaternion as yaw_of
from lost_and_found.sim.gridmap import GridMap, save_map

PKG = 'lost_and_found'
TIMEOUT = 15.0
#: Sim seconds per driver tick, and wall seconds between ticks (2x real time).
TICK = 0.05
WALL_TICK = 0.025
#: Laser mounted 0.1 m ahead of the base, facing forward.
LASER = (0.1, 0.0, 0.0)
#: The true start pose (the node's initial_pose_* in sim_localizer.test).
START = (1.0, 0.5, 0.3)


def room():
    """A 6 m x 5 m room with 0.1 m walls, a table and a pillar (asymmetric)."""
    res = 0.05
    rows, cols = 100, 120
    blank = GridMap.from_occupancy(np.zeros((rows, cols), dtype=bool), res)
    cx, cy = blank.cell_center(*np.indices(blank.shape))
    walls = (cx < 0.1) | (cx > 5.9) | (cy < 0.1) | (cy > 4.9)
    walls |= (cx > 3.0) & (cx < 4.0) & (cy > 3.0) & (cy < 3.6)     # table
    walls |= (cx > 1.8) & (cx < 2.1) & (cy > 1.5) & (cy < 1.8)     # pillar
    return GridMap.from_occupancy(walls, res)


def cast(grid, pose, angles, range_max):
    """Ranges from ``pose`` along ``angles`` (laser frame); no return is +inf."""
    steps = np.arange(grid.resolution / 2, range_max, grid.resolution / 2)
    heading = pose[2] + angles
    hit = grid.is_occupied(pose[0] + np.cos(heading)[:, None] * steps,
                           pose[1] + np.sin(heading)[:, None] * steps)
    return np.where(hit.any(axis=1), steps[np.argmax(hit, axis=1)], np.inf)


def compose(a, b):
    """a (+) b for 2D poses."""
    c, s = math.cos(a[2]), math.sin(a[2])
    return (a[0] + c * b[0] - s * b[1], a[1] + s * b[0] + c * b[1], a[2] + b[2])


def transform(parent, child, pose, stamp):
    """A TransformStamped of a 2D pose."""
    t = TransformStamped()
    t.header.stamp = stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform.translation.x, t.transform.translation.y = pose[0], pose[1]
    t.transform.rotation.z, t.transform.rotation.w = math.sin(pose[2] / 2), math.cos(pose[2] / 2)
    return t


class SimLocalizerTest(unittest.TestCase):
    """Drives sim_localizer with a scripted robot and checks amcl's interface."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='sim_localizer_test_')
        self.grid = room()
        map_file = os.path.join(self.tmp, 'room.yaml')
        save_map(self.grid, map_file)
        rospy.set_param('/sim_localizer/map_file', map_file)
        rospy.init_node('test_sim_localizer', anonymous=True)
        self.lock = threading.Condition()
        self.poses, self.clouds = [], []
        self.sim_time = 1.0
        self.truth, self.odom = START, (0.0, 0.0, 0.0)
        self.scans_sent = 0
        self.clock_pub = rospy.Publisher('/clock', Clock, queue_size=10)
        self.scan_pub = rospy.Publisher('scan', LaserScan, queue_size=10)
        self.tf_pub = tf2_ros.TransformBroadcaster()
        self.static_pub = tf2_ros.StaticTransformBroadcaster()
        rospy.Subscriber('amcl_pose', PoseWithCovarianceStamped, self.on_pose)
        rospy.Subscriber('particlecloud', PoseArray, self.on_cloud)
        self.buffer = tf2_ros.Buffer()
        self.listener = tf2_ros.TransformListener(self.buffer)
        self.running = True
        self.driver = threading.Thread(target=self.drive, daemon=True)
        self.driver.start()
        self.launch = roslaunch.scriptapi.ROSLaunch()
        self.launch.start()
        self.process = self.launch.launch(roslaunch.core.Node(
            PKG, 'sim_localizer', name='sim_localizer', output='screen'))
        self.wait_for(lambda: self.scan_pub.get_num_connections() > 0, 'scan subscriber')

    def tearDown(self):
        self.running = False
        self.driver.join(2.0)
        self.process.stop()
        self.launch.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ------------------------------------------------------------------ the fake simulator
    def drive(self):
        """Advance /clock by TICK every WALL_TICK; odom tf every tick, a scan every 2 ticks."""
        stop = threading.Event()
        tick = 0
        angles = -math.pi + (2 * math.pi / 360) * np.arange(360)
        self.static_pub.sendTransform(transform('base_footprint', 'base_laser_link', LASER,
                                                rospy.Time(self.sim_time)))
        while self.running and not rospy.is_shutdown():
            with self.lock:
                self.sim_time += TICK
                stamp = rospy.Time(self.sim_time)
                truth, odom = self.truth, self.odom
            self.clock_pub.publish(Clock(clock=stamp))
            self.tf_pub.sendTransform(transform('odom', 'base_footprint', odom, stamp))
            tick += 1
            if tick % 2 == 0:
                scan = LaserScan()
                scan.header.stamp = stamp
                scan.header.frame_id = 'base_laser_link'
                scan.angle_min, scan.angle_increment = angles[0], angles[1] - angles[0]
                scan.angle_max = angles[-1]
                scan.range_min, scan.range_max = 0.1, 5.0
                scan.ranges = cast(self.grid, compose(truth, LASER), angles, 5.0).tolist()
                self.scan_pub.publish(scan)
                with self.lock:
                    self.scans_sent += 1
                    self.last_scan_stamp = stamp
            stop.wait(WALL_TICK)       # the simulator's pace, not a synchronisation

    def move(self, delta):
        """Move the robot by ``delta`` (robot frame): truth and odometry alike."""
        with self.lock:
            self.truth = compose(self.truth, delta)
            self.odom = compose(self.odom, delta)
            return self.scans_sent

    def on_pose(self, msg):
        with self.lock:
            self.poses.append(msg)
            self.lock.notify_all()

    def on_cloud(self, msg):
        with self.lock:
            self.clouds.append(msg)

    def wait_for(self, predicate, what, timeout=TIMEOUT):
        """Poll ``predicate`` at 20 Hz; fail the test if it is not true within ``timeout``."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if rospy.is_shutdown() or time.monotonic() > deadline:
                self.fail('timed out after %.0f s waiting for %s' % (timeout, what))
            with self.lock:
                self.lock.wait(0.05)

    def count(self):
        with self.lock:
            return len(self.poses)

    def scans(self):
        with self.lock:
            return self.scans_sent

    def assert_near_truth(self, msg, tolerance=0.3):
        p = msg.pose.pose
        err = math.hypot(p.position.x - self.truth[0], p.position.y - self.truth[1])
        yaw_err = abs(math.remainder(yaw_of(p.orientation) - self.truth[2], 2 * math.pi))
        self.assertLess(err, tolerance, msg.pose.pose)
        self.assertLess(yaw_err, 0.2, msg.pose.pose)
        self.assertEqual(msg.header.frame_id, 'map')

    # ------------------------------------------------------------------ the test
    def test_amcl_interface(self):
        # The first scan forces an update and a publication, as amcl does at start-up.
        self.wait_for(lambda: self.count() >= 1, 'the first amcl_pose')
        self.assert_near_truth(self.poses[0])
        # Standing still: no more poses. 20 scans later, a nomotion update yields exactly one;
        # the node handles scans in order, so a pose from a still scan would come first.
        still = self.scans()
        self.wait_for(lambda: self.scans() >= still + 20, '20 scans standing still')
        self.assertEqual(self.count(), 1)
        rospy.ServiceProxy('request_nomotion_update', Empty)()
        self.wait_for(lambda: self.count() >= 2, 'amcl_pose after request_nomotion_update')
        before = self.scans()
        self.wait_for(lambda: self.scans() >= before + 10, '10 more scans standing still')
        self.assertEqual(self.count(), 2)

        # Below update_min_d (0.25 m): nothing; beyond it: one pose, stamped after the move.
        moved_at = self.move((0.15, 0.0, 0.0))
        self.wait_for(lambda: self.scans() >= moved_at + 10, '10 scans after a short move')
        self.assertEqual(self.count(), 2)
        with self.lock:
            self.move((0.15, 0.0, 0.0))
            moved_time = self.sim_time      # scans of the moved robot are stamped later
        self.wait_for(lambda: self.count() >= 3, 'amcl_pose after moving 0.3 m')
        with self.lock:
            third = self.poses[2]
        self.assert_near_truth(third)
        self.assertGreater(third.header.stamp.to_sec(), moved_time)
        cov = np.reshape(third.pose.covariance, (6, 6))
        self.assertLess(math.sqrt(cov[0, 0] + cov[1, 1]), 0.3)

        # map -> odom on tf: map -> base_footprint is the true pose (odom started at 0).
        def map_base():
            try:
                return self.buffer.lookup_transform('map', 'base_footprint', rospy.Time(0))
            except tf2_ros.TransformException:
                return None
        self.wait_for(lambda: map_base() is not None, 'tf map -> base_footprint')
        t = map_base().transform
        self.assertLess(math.hypot(t.translation.x - self.truth[0],
                                   t.translation.y - self.truth[1]), 0.3)
        self.wait_for(lambda: len(self.clouds) > 0, 'particlecloud')
        self.assertGreaterEqual(len(self.clouds[-1].poses), 500)

        # global_localization: the next (forced) amcl_pose has a huge covariance.
        rospy.ServiceProxy('global_localization', Empty)()
        self.wait_for(lambda: self.count() >= 4, 'amcl_pose after global_localization')
        cov = np.reshape(self.poses[3].pose.covariance, (6, 6))
        self.assertGreater(math.sqrt(cov[0, 0] + cov[1, 1]), 1.0, cov[:2, :2])
        self.assertGreater(cov[5, 5], 0.5)


if __name__ == '__main__':
    rostest.rosrun(PKG, 'sim_localizer_interface', SimLocalizerTest)
