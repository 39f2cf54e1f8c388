"""The sim_world node: a simulated TurtleBot2 that is also the ROS clock.

All of the simulation is in :class:`lost_and_found.sim.world.World`; this module runs it in a
loop paced on wall time, publishes ``/clock`` every step and the sensors at their rates, all
stamped with sim time, and serves the kidnap / teleport / reset services.
"""
import math
import sys
import threading
import time

import rospy
import tf2_ros
from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray
from geometry_msgs.msg import (PoseStamped, Quaternion, Transform, TransformStamped, Twist,
                               Vector3)
from kobuki_msgs.msg import SensorState, WheelDropEvent
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import LaserScan
from std_msgs.msg import UInt32
from std_srvs.srv import Empty, EmptyResponse

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError
from lost_and_found.core.fiducial import load_fiducial_map
from lost_and_found.nodes.conversions import pose_stamped, quaternion_from_yaw
from lost_and_found.nodes.params import load_config
from lost_and_found.sim.gridmap import MapError, load_map
from lost_and_found.sim.world import LEFT, SimWorldConfig, World, group_config
from lost_and_found.srv import Kidnap, KidnapResponse, Teleport, TeleportResponse

#: How often (s) a repeating problem (bad command, falling behind) is logged at most.
_THROTTLE = 10.0
#: How long (wall s) the kidnap service waits for the sim loop to lift the robot.
_LIFT_TIMEOUT = 5.0
#: Falling this far (wall s) behind the requested speed re-anchors the pacing instead of
#: running flat out to catch up (which would make sim time jump for everyone else).
_MAX_LAG = 0.5
#: Battery voltage reported in SensorState (0.1 V units): a charged Kobuki.
_BATTERY = 160
#: A sensor is due when sim time is this close to its schedule (float sums of the step).
_DUE_SLACK = 1e-6


def transform_msg(matrix):
    """geometry_msgs/Transform of a 4x4 rigid transform."""
    x, y, z, w = geometry.matrix_to_quaternion(matrix[:3, :3])
    t = matrix[:3, 3]
    return Transform(translation=Vector3(x=float(t[0]), y=float(t[1]), z=float(t[2])),
                     rotation=Quaternion(x=x, y=y, z=z, w=w))


def planar_transform(parent, child, stamp, x, y, z, yaw):
    """geometry_msgs/TransformStamped of a planar offset ``(x, y, z, yaw)``."""
    msg = TransformStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = parent
    msg.child_frame_id = child
    msg.transform.translation = Vector3(x=x, y=y, z=z)
    msg.transform.rotation = quaternion_from_yaw(yaw)
    return msg


def scan_msg(ranges, laser_config, frame, stamp, scan_time):
    """sensor_msgs/LaserScan of one scan of ``ranges`` (m)."""
    msg = LaserScan()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.angle_min = laser_config.angle_min
    msg.angle_max = laser_config.angle_max
    msg.angle_increment = (laser_config.angle_max - laser_config.angle_min) / \
        (laser_config.beams - 1)
    msg.time_increment = 0.0
    msg.scan_time = scan_time
    msg.range_min = laser_config.range_min
    msg.range_max = laser_config.range_max
    msg.ranges = [float(r) for r in ranges]
    return msg


def odometry_msg(pose, v, w, odom_frame, base_frame, stamp):
    """nav_msgs/Odometry of an odom-frame pose ``(x, y, yaw)`` and speeds ``(v, w)``."""
    msg = Odometry()
    msg.header.stamp = stamp
    msg.header.frame_id = odom_frame
    msg.child_frame_id = base_frame
    msg.pose.pose.position.x, msg.pose.pose.position.y = pose[0], pose[1]
    msg.pose.pose.orientation = quaternion_from_yaw(pose[2])
    msg.twist.twist.linear.x = v
    msg.twist.twist.angular.z = w
    return msg


def sensor_state_msg(wheel_dropped, docked, stamp):
    """kobuki_msgs/SensorState with the wheel-drop bits and the charger state."""
    msg = SensorState()
    msg.header.stamp = stamp
    msg.time_stamp = int(stamp.to_sec() * 1000.0) % 65536     # the Kobuki's ms counter
    msg.wheel_drop = (SensorState.WHEEL_DROP_LEFT if wheel_dropped[0] else 0) | \
        (SensorState.WHEEL_DROP_RIGHT if wheel_dropped[1] else 0)
    msg.charger = SensorState.DOCKING_CHARGING if docked else SensorState.DISCHARGING
    msg.battery = _BATTERY
    return msg


def wheel_drop_msg(edge):
    """kobuki_msgs/WheelDropEvent of a :data:`lost_and_found.sim.world.WheelDrop` edge."""
    return WheelDropEvent(wheel=WheelDropEvent.LEFT if edge.wheel == LEFT
                          else WheelDropEvent.RIGHT,
                          state=WheelDropEvent.DROPPED if edge.dropped
                          else WheelDropEvent.RAISED)


def fiducials_msg(detections, frame, stamp, image_seq):
    """fiducial_msgs/FiducialTransformArray of camera detections (may be empty)."""
    msg = FiducialTransformArray()
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.image_seq = image_seq
    for detection in detections:
        msg.transforms.append(FiducialTransform(
            fiducial_id=detection.fiducial_id,
            transform=transform_msg(detection.T_camera_fiducial),
            image_error=detection.image_error, object_error=detection.object_error,
            fiducial_area=detection.fiducial_area))
    return msg


class SimWorldNode:
    """ROS adapter of :class:`World`: the simulated TurtleBot2 and the ROS clock.

    Subscribed topics:
        ``cmd_vel`` (geometry_msgs/Twist): velocity command; one older than ``~cmd_timeout``
        (sim s) stops the robot; ignored while the robot is in the air.

    Published topics (stamped with sim time):
        ``/clock`` (rosgraph_msgs/Clock): every step.
        ``scan`` (sensor_msgs/LaserScan): at ``~scan_rate``.
        ``odom`` (nav_msgs/Odometry) and tf ``odom -> base_footprint``: at ``~odom_rate``.
        ``/tf_static``: ``base_footprint -> base_laser_link`` and
        ``-> camera_rgb_optical_frame``.
        ``mobile_base/events/wheel_drop`` (kobuki_msgs/WheelDropEvent): on every switch edge.
        ``mobile_base/sensors/core`` (kobuki_msgs/SensorState): at ``~sensor_state_rate``.
        ``fiducial_transforms`` (fiducial_msgs/FiducialTransformArray): at ``~camera_rate``
        when ``~fiducial_map`` is set (also when empty).
        ``~ground_truth`` (geometry_msgs/PoseStamped, map frame): at ``~odom_rate``.
        ``~collisions`` (std_msgs/UInt32, latched): on change.

    Services:
        ``~kidnap`` (lost_and_found/Kidnap), ``~teleport`` (lost_and_found/Teleport),
        ``~reset`` (std_srvs/Empty).

    Parameters:
        See :data:`SimWorldConfig` and ``config/sim_world.yaml``.
    """

    def __init__(self, world, config):
        """Keep the world and config; ROS connections are made by :meth:`start`."""
        self._world = world
        self._config = config
        self._laser_config = group_config(config, 'laser')
        self._camera_config = group_config(config, 'camera')
        # The sim loop, the cmd_vel callback and the services all touch the world.
        self._lock = threading.Lock()
        self._stepped = threading.Condition(self._lock)
        self._pending_edges = []
        self._pubs = {}
        self._subs = []
        self._services = []
        self._tf = None
        self._static_tf = None
        self._published_collisions = None
        self._image_seq = 0
        self._due = {}

    def start(self):
        """Advertise, subscribe, serve, and publish the static transforms."""
        pub = rospy.Publisher
        self._pubs = {
            'clock': pub('/clock', Clock, queue_size=10),
            'scan': pub('scan', LaserScan, queue_size=5),
            'odom': pub('odom', Odometry, queue_size=10),
            'wheel_drop': pub('mobile_base/events/wheel_drop', WheelDropEvent, queue_size=20),
            'core': pub('mobile_base/sensors/core', SensorState, queue_size=10),
            'ground_truth': pub('~ground_truth', PoseStamped, queue_size=10),
            'collisions': pub('~collisions', UInt32, queue_size=1, latch=True),
        }
        if self._world.camera is not None:
            self._pubs['fiducials'] = pub('fiducial_transforms', FiducialTransformArray,
                                          queue_size=5)
        self._tf = tf2_ros.TransformBroadcaster()
        self._static_tf = tf2_ros.StaticTransformBroadcaster()
        self._publish_static(rospy.Time.from_sec(self._world.time))
        self._publish_collisions()
        self._subs = [rospy.Subscriber('cmd_vel', Twist, self._on_cmd_vel,
                                       queue_size=1)]
        self._services = [
            rospy.Service('~kidnap', Kidnap, self._on_kidnap),
            rospy.Service('~teleport', Teleport, self._on_teleport),
            rospy.Service('~reset', Empty, self._on_reset),
        ]
        cfg = self._config
        periods = {'scan': 1.0 / cfg.scan_rate, 'odom': 1.0 / cfg.odom_rate,
                   'core': 1.0 / cfg.sensor_state_rate, 'camera': 1.0 / cfg.camera_rate}
        self._due = {name: [self._world.time, period] for name, period in periods.items()}
        rospy.loginfo('%s: robot at (%.2f, %.2f, %.2f), %s x real time, step %.3f s',
                      rospy.get_name(), *self._world.pose,
                      cfg.speed if cfg.speed > 0 else 'max', cfg.step)

    def _publish_static(self, stamp):
        """The laser and camera mounts (one message: tf_static latches only the last one)."""
        cfg, laser = self._config, self._laser_config
        to_laser = planar_transform(cfg.base_frame, cfg.laser_frame, stamp,
                                    laser.x, laser.y, laser.z, laser.yaw)
        to_camera = TransformStamped()
        to_camera.header.stamp = stamp
        to_camera.header.frame_id = cfg.base_frame
        to_camera.child_frame_id = cfg.camera_frame
        to_camera.transform = transform_msg(self._camera_config.base_to_camera())
        self._static_tf.sendTransform([to_laser, to_camera])

    # --- the loop ------------------------------------------------------------------------

    def run(self):
        """Step the world until shutdown, pacing sim time at ``~speed`` x wall time."""
        cfg = self._config
        anchor_wall, anchor_sim = time.monotonic(), self._world.time
        while not rospy.is_shutdown():
            try:
                self._tick()
            except Exception as error:  # noqa: B902 - the clock must never stop
                rospy.logerr_throttle(_THROTTLE, '%s: error in the sim loop: %r' % (
                    rospy.get_name(), error))
            if cfg.speed <= 0:
                continue
            delay = anchor_wall + (self._world.time - anchor_sim) / cfg.speed - time.monotonic()
            if delay > 0:
                time.sleep(delay)      # pacing the clock, not synchronising with anyone
            elif delay < -_MAX_LAG:
                rospy.logwarn_throttle(_THROTTLE, '%s: cannot keep %.1f x real time' % (
                    rospy.get_name(), cfg.speed))
                anchor_wall, anchor_sim = time.monotonic(), self._world.time

    def _tick(self):
        """One step: advance the world, publish the clock, edges and the sensors due."""
        with self._lock:
            edges = self._pending_edges + self._world.step(self._config.step)
            self._pending_edges = []
            now = self._world.time
            due = [name for name, slot in self._due.items() if now + _DUE_SLACK >= slot[0]]
            for name in due:
                slot = self._due[name]
                # Stay on the schedule, but never try to catch up on missed slots.
                slot[0] = max(slot[0] + slot[1], now)
            snapshot = self._snapshot(due)
            self._stepped.notify_all()
        stamp = rospy.Time.from_sec(now)
        self._pubs['clock'].publish(Clock(clock=stamp))
        for edge in edges:
            self._pubs['wheel_drop'].publish(wheel_drop_msg(edge))
            rospy.loginfo('%s: %s wheel %s', rospy.get_name(),
                          'left' if edge.wheel == LEFT else 'right',
                          'dropped' if edge.dropped else 'raised')
        self._publish(snapshot, stamp)
        self._publish_collisions()

    def _snapshot(self, due):
        """Read what the due sensors need while the lock is held (plain values only)."""
        world = self._world
        snapshot = {}
        if 'scan' in due:
            snapshot['scan'] = world.scan()
        # Every scan goes out with the odometry of its instant, so that a localizer looking up
        # odom -> base at the scan's stamp always finds it.
        if 'odom' in due or 'scan' in due:
            snapshot['odom'] = (world.odometry.pose, world.odometry.v, world.odometry.w,
                                world.pose)
        if 'core' in due:
            snapshot['core'] = (tuple(world.wheel_dropped), world.docked)
        if 'camera' in due and world.camera is not None:
            snapshot['camera'] = world.detections()
        return snapshot

    def _publish(self, snapshot, stamp):
        """Publish the sensors in ``snapshot``."""
        cfg = self._config
        if 'odom' in snapshot:
            odom_pose, v, w, truth = snapshot['odom']
            self._pubs['odom'].publish(odometry_msg(odom_pose, v, w, cfg.odom_frame,
                                                    cfg.base_frame, stamp))
            self._tf.sendTransform(planar_transform(cfg.odom_frame, cfg.base_frame, stamp,
                                                    odom_pose[0], odom_pose[1], 0.0,
                                                    odom_pose[2]))
            self._pubs['ground_truth'].publish(pose_stamped(*truth[:3], cfg.map_frame, stamp))
        if 'scan' in snapshot:          # after the odometry of its instant (see _snapshot)
            self._pubs['scan'].publish(scan_msg(snapshot['scan'], self._laser_config,
                                                cfg.laser_frame, stamp, 1.0 / cfg.scan_rate))
        if 'core' in snapshot:
            self._pubs['core'].publish(sensor_state_msg(*snapshot['core'], stamp))
        if 'camera' in snapshot:
            self._image_seq += 1
            self._pubs['fiducials'].publish(fiducials_msg(snapshot['camera'], cfg.camera_frame,
                                                          stamp, self._image_seq))

    def _publish_collisions(self):
        """Publish the collision count when it changed."""
        count = self._world.collisions
        if count != self._published_collisions:
            self._pubs['collisions'].publish(UInt32(data=count))
            if self._published_collisions is not None and count > self._published_collisions:
                where = self._world.drive.last_collision
                rospy.logwarn('%s: collision (%d so far) at (%.2f, %.2f, %.0f deg) driving %.2f '
                              'm/s, %.2f rad/s', rospy.get_name(), count, where[0], where[1],
                              math.degrees(where[2]), where[3], where[4])
            self._published_collisions = count

    # --- callbacks -----------------------------------------------------------------------

    def _on_cmd_vel(self, msg):
        try:
            with self._lock:
                self._world.command(msg.linear.x, msg.angular.z)
        except ValueError as error:
            rospy.logwarn_throttle(_THROTTLE, '%s: skipping bad cmd_vel: %s' % (
                rospy.get_name(), error))

    def _on_kidnap(self, req):
        """Lift the robot now; answer once it is in the air (the put-down comes later)."""
        try:
            with self._lock:
                here = self._world.pose
                if req.random:
                    target = self._world.random_free_pose(
                        min_distance_from=here[:2], min_distance=max(0.0, req.min_distance))
                else:
                    target = (req.pose.x, req.pose.y, req.pose.theta)
                self._world.kidnap(target, req.hold)
                hold = req.hold if req.hold > 0 else self._config.kidnap_hold
                lifted = self._stepped.wait_for(lambda: self._world.both_dropped
                                                or not self._world.lifted, _LIFT_TIMEOUT)
        except ValueError as error:
            rospy.logwarn('%s: kidnap refused: %s', rospy.get_name(), error)
            return KidnapResponse(success=False, message=str(error), pose=req.pose)
        if not lifted:
            return KidnapResponse(success=False, pose=req.pose,
                                  message='the sim loop did not lift the robot in time')
        rospy.loginfo('%s: kidnapped from (%.2f, %.2f, %.2f), put down at (%.2f, %.2f, '
                      '%.2f) in %.1f s', rospy.get_name(), *(here + target), hold)
        response = KidnapResponse(success=True, message='lifted; put down in %.1f s' % hold)
        response.pose.x, response.pose.y, response.pose.theta = target
        return response

    def _on_teleport(self, req):
        try:
            with self._lock:
                self._world.teleport((req.pose.x, req.pose.y, req.pose.theta))
        except ValueError as error:
            rospy.logwarn('%s: teleport refused: %s', rospy.get_name(), error)
            return TeleportResponse(success=False, message=str(error))
        rospy.loginfo('%s: teleported to (%.2f, %.2f, %.2f)', rospy.get_name(),
                      req.pose.x, req.pose.y, req.pose.theta)
        return TeleportResponse(success=True, message='')

    def _on_reset(self, _req):
        with self._lock:
            self._pending_edges += self._world.reset()
        rospy.loginfo('%s: reset to the start pose', rospy.get_name())
        return EmptyResponse()


def main():
    """Run the sim_world node."""
    rospy.init_node('sim_world')
    config = load_config(SimWorldConfig)
    try:
        grid = load_map(config.map_file)
        fiducial_map = load_fiducial_map(config.fiducial_map) if config.fiducial_map else None
        world = World(config, grid, fiducial_map)
        if not world.free_pose(config.start_pose):
            raise ValueError('start_pose=%r: the robot does not fit there' % (
                list(config.start_pose),))
    except (MapError, ConfigError, ValueError) as error:
        rospy.logfatal('%s: refusing to start: %s', rospy.get_name(), error)
        sys.exit(1)
    node = SimWorldNode(world, config)
    node.start()
    node.run()
