"""The world: config, command timeout, kidnap sequence, teleport, random poses, dock, reset."""
import math

import numpy as np
import pytest

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.fiducial import FiducialMap, facing_yaw_rotation
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.world import LEFT, RIGHT, SimWorldConfig, WheelDrop, World, group_config

RES = 0.05
DT = 0.02


def room():
    """A 4 m x 3 m room with walls one cell thick and a pillar from (2.0, 1.0) to (2.5, 1.5)."""
    occupied = np.zeros((60, 80), dtype=bool)
    occupied[[0, -1], :] = True
    occupied[:, [0, -1]] = True
    occupied[20:30, 40:50] = True
    return GridMap.from_occupancy(occupied, RES)


def make_world(fiducial_map=None, **params):
    values = {'map_file': 'room.yaml', 'start_pose': [1.0, 0.6, 0.0],
              'odometry': {'translation_noise': 0.0, 'rotation_noise': 0.0,
                           'drift_noise': 0.0}}
    values.update(params)
    return World(config_from_params(SimWorldConfig, values), room(), fiducial_map)


def advance(world, seconds, v=None, w=0.0):
    """Step ``seconds`` of sim time (re-sending the command each step, if any)."""
    events = []
    for _ in range(int(round(seconds / DT))):
        if v is not None:
            world.command(v, w)
        events += world.step(DT)
    return events


def test_defaults_and_groups():
    config = config_from_params(SimWorldConfig, {'map_file': 'x.yaml'})
    assert (config.speed, config.step, config.kidnap_hold) == (5.0, 0.02, 3.0)
    assert (config.scan_rate, config.odom_rate, config.sensor_state_rate,
            config.camera_rate) == (10.0, 20.0, 10.0, 5.0)
    assert group_config(config, 'robot').radius == 0.18
    assert group_config(config, 'laser').beams == 640
    assert group_config(config, 'camera').hfov == 1.0
    assert group_config(config, 'laser').no_return == 'inf'
    nested = config_from_params(SimWorldConfig, {'map_file': 'x', 'laser': {
        'beams': 100, 'no_return': 'nan'}})
    assert group_config(nested, 'laser').beams == 100
    assert group_config(nested, 'laser').no_return == 'nan'


def test_bad_config_names_every_key():
    with pytest.raises(ConfigError) as error:
        config_from_params(SimWorldConfig, {
            'speed': -1.0, 'step': 0.5, 'start_pose': [1.0, 2.0], 'dock_pose': [0.0],
            'seed': -3, 'laser': {'beams': 1, 'no_return': 'zero'}, 'robot': {'radius': -0.1}})
    text = str(error.value)
    for key in ('map_file=', 'speed=-1.0', 'step=0.5', 'start_pose=', 'dock_pose=', 'seed=-3',
                'laser/beams=1', "laser/no_return='zero'", 'robot/radius=-0.1'):
        assert key in text


def test_unknown_keys_are_warned_about():
    warnings = []
    config_from_params(SimWorldConfig, {'map_file': 'x', 'laser': {'beamz': 3}},
                       warn=warnings.append)
    assert len(warnings) == 1 and 'laser/beamz' in warnings[0]


def test_commands_drive_truth_and_odometry_and_time_out():
    world = make_world()
    advance(world, 1.0, v=0.3)
    assert world.time == pytest.approx(1.0)
    x, y, _ = world.pose
    assert x > 1.2 and y == pytest.approx(0.6)
    assert world.odometry.pose[0] == pytest.approx(x - 1.0)
    # No new command: the robot stops once the last one is older than cmd_timeout (0.5 s).
    advance(world, 0.5)
    moving_at = world.pose[0]
    advance(world, 1.0)
    assert world.drive.v == 0.0 and world.pose[0] == pytest.approx(moving_at, abs=0.05)


def test_kidnap_sequence():
    world = make_world()
    advance(world, 0.4, v=0.2)
    odom_before = world.odometry.pose
    lifted_at = world.time
    world.kidnap((3.0, 2.4, 1.0), hold=2.0)
    assert world.lifted and world.drive.v == 0.0
    events = advance(world, DT)
    assert [(e.wheel, e.dropped) for e in events] == [(LEFT, True), (RIGHT, True)]
    assert 0 < events[1].time - events[0].time < 0.02 and events[0].time == lifted_at
    assert world.both_dropped
    # In the air: commands are ignored, neither truth nor odometry moves.
    pose_in_air = world.pose
    assert advance(world, 1.9, v=0.3) == []
    assert world.pose == pose_in_air and world.odometry.pose == odom_before
    events = advance(world, 0.2)
    assert [(e.wheel, e.dropped) for e in events] == [(LEFT, False), (RIGHT, False)]
    assert events[0].time == pytest.approx(lifted_at + 0.005 + 2.0)
    assert world.pose == pytest.approx((3.0, 2.4, 1.0)) and not world.lifted
    assert world.odometry.pose == odom_before          # odometry never saw the carry
    advance(world, 0.5, v=0.2)
    assert world.pose[0] != 3.0                         # commands work again


def test_kidnap_default_hold_and_refusals():
    world = make_world(kidnap_hold=1.0)
    world.kidnap((3.0, 2.4, 0.0), hold=0.0)
    with pytest.raises(ValueError):
        world.kidnap((3.0, 2.4, 0.0))                    # one at a time
    with pytest.raises(ValueError):
        world.teleport((3.0, 2.4, 0.0))                  # not while carried
    events = advance(world, 1.1)
    assert [e.dropped for e in events] == [True, True, False, False]
    with pytest.raises(ValueError):
        world.kidnap((2.2, 1.2, 0.0))                    # inside the pillar
    with pytest.raises(ValueError):
        world.kidnap((0.1, 1.0, 0.0))                    # the disc would touch the wall
    assert not world.lifted


def test_teleport_is_silent():
    world = make_world()
    world.teleport((3.0, 2.0, -1.0))
    assert advance(world, 0.2) == []
    assert world.pose == pytest.approx((3.0, 2.0, -1.0))
    assert world.odometry.pose == (0.0, 0.0, 0.0)


def test_random_free_pose_has_clearance_and_distance():
    world = make_world()
    rng = np.random.default_rng(7)
    distances = world.grid.distance_field()
    for _ in range(50):
        x, y, yaw = world.random_free_pose(rng, (1.0, 0.6), 2.0)
        assert math.hypot(x - 1.0, y - 0.6) >= 2.0
        assert world.drive.clearance(x, y) >= 0.18 + 0.1 - 1e-9
        rows, cols = world.grid.cell_index(x, y)
        assert distances[rows, cols] >= 0.28 and -math.pi <= yaw < math.pi
    with pytest.raises(ValueError):
        world.random_free_pose(rng, (1.0, 0.6), 50.0)
    assert world.random_free_pose(np.random.default_rng(1)) == \
        world.random_free_pose(np.random.default_rng(1))


def test_random_free_poses_keep_the_clearance_diagonally_too():
    """A pose diagonal to an obstacle's cell is nearer its square's corner than the distance
    between the centres less half a cell; the pose must keep ``clearance`` from the square."""
    occupied = np.zeros((24, 24), dtype=bool)
    occupied[[0, -1], :] = True
    occupied[:, [0, -1]] = True
    occupied[12, 12] = True                               # a post in a 2.4 m room, 0.1 m cells
    world = World(config_from_params(SimWorldConfig, {'map_file': 'room.yaml',
                                                      'start_pose': [0.5, 0.5, 0.0]}),
                  GridMap.from_occupancy(occupied, 0.1))
    rng = np.random.default_rng(3)
    poses = [world.random_free_pose(rng, clearance=0.3) for _ in range(300)]
    nearest = min(world.drive.clearance(x, y) for x, y, _ in poses)
    assert 0.3 - 1e-9 <= nearest <= 0.35 + 1e-9


def test_random_free_poses_keep_the_clearance_from_the_maps_edge():
    """Free space that runs off the grid (no wall at its edge): the robot cannot leave its map
    (the edge is a wall to it), so no random pose is nearer the edge than the clearance."""
    occupied = np.zeros((20, 40), dtype=bool)            # 2 m x 1 m, 0.05 m cells, no walls
    world = World(config_from_params(SimWorldConfig, {'map_file': 'open.yaml',
                                                      'start_pose': [1.0, 0.5, 0.0]}),
                  GridMap.from_occupancy(occupied, RES))
    rng = np.random.default_rng(4)
    poses = [world.random_free_pose(rng, clearance=0.3) for _ in range(300)]
    edge = [min(x, 2.0 - x, y, 1.0 - y) for x, y, _ in poses]
    assert min(edge) >= 0.3 and world.free_pose(poses[0])
    # Only the middle of the 1 m wide strip qualifies: y within 0.2 m of 0.5.
    assert all(abs(y - 0.5) <= 0.2 + 1e-9 for _, y, _ in poses)
    with pytest.raises(ValueError):
        world.random_free_pose(rng, clearance=0.6)       # wider than half the strip


def test_dock_and_charger():
    world = make_world(dock_pose=[1.1, 0.6, math.pi])
    assert world.docked
    world.teleport((1.3, 0.6, 0.0))
    assert not world.docked
    assert not make_world().docked                      # no dock configured
    world = make_world(dock_pose=[1.1, 0.6, math.pi])
    world.kidnap((1.0, 0.6, 0.0), hold=1.0)
    world.step(DT)
    assert not world.docked                             # in the air


def test_collisions_and_reset():
    world = make_world()
    world.teleport((1.5, 1.25, 0.0))                    # heading for the pillar at x = 2.0
    advance(world, 3.0, v=0.5)
    assert world.collisions == 1 and world.pose[0] < 2.0 - 0.18 + 1e-9
    world.kidnap((3.0, 2.4, 0.0), hold=5.0)
    advance(world, 0.1)
    events = world.reset()
    assert [(e.wheel, e.dropped) for e in events] == [(LEFT, False), (RIGHT, False)]
    assert world.collisions == 0 and not world.lifted
    assert world.pose == (1.0, 0.6, 0.0) and world.odometry.pose == (0.0, 0.0, 0.0)
    assert advance(world, 6.0) == []                    # the cancelled put-down never comes


def test_sensors():
    tags = FiducialMap('map', {2: geometry.make_transform(facing_yaw_rotation(math.pi),
                                                          (3.95, 0.6, 0.3))})
    world = make_world(tags, laser={'noise': 0.0, 'x': 0.0}, camera={'pixel_noise': 0.0})
    ranges = world.scan()
    assert ranges.size == 640
    assert ranges[320] == pytest.approx(2.95 / math.cos(world.laser.angles[320]))
    detections = world.detections()
    assert [d.fiducial_id for d in detections] == [2]
    assert detections[0].distance == pytest.approx(2.85)
    assert make_world().detections() == []


def test_seeded_worlds_are_repeatable():
    def trajectory(seed):
        world = make_world(seed=seed, odometry={'drift_noise': 0.05})
        advance(world, 2.0, v=0.3, w=0.2)
        return world.odometry.pose, tuple(world.scan()[:5])

    assert trajectory(3) == trajectory(3)
    assert trajectory(3) != trajectory(4)


def test_bad_step_is_refused():
    world = make_world()
    for dt in (0.0, -0.1, math.nan):
        with pytest.raises(ValueError):
            world.step(dt)
    assert world.time == 0.0
    assert WheelDrop(LEFT, True, 1.0).dropped


# --- the node's message conversions (message classes only, no master) ---------------------

def test_messages_of_the_adapter():
    import rospy
    from kobuki_msgs.msg import SensorState, WheelDropEvent
    from lost_and_found.nodes import sim_world as node

    stamp = rospy.Time.from_sec(12.5)
    state = node.sensor_state_msg((True, False), True, stamp)
    assert state.wheel_drop == SensorState.WHEEL_DROP_LEFT
    assert state.charger == SensorState.DOCKING_CHARGING and state.time_stamp == 12500
    state = node.sensor_state_msg((True, True), False, stamp)
    assert state.wheel_drop == 3 and state.charger == SensorState.DISCHARGING
    edge = node.wheel_drop_msg(WheelDrop(RIGHT, False, 1.0))
    assert (edge.wheel, edge.state) == (WheelDropEvent.RIGHT, WheelDropEvent.RAISED)

    world = make_world(FiducialMap('map', {2: geometry.make_transform(
        facing_yaw_rotation(math.pi), (3.95, 0.6, 0.3))}), camera={'pixel_noise': 0.0})
    msg = node.fiducials_msg(world.detections(), 'cam', stamp, 7)
    assert (msg.header.frame_id, msg.image_seq, len(msg.transforms)) == ('cam', 7, 1)
    rotation = msg.transforms[0].transform.rotation
    # diag(1, -1, -1): a half turn about x.
    assert (abs(rotation.x), rotation.w) == pytest.approx((1.0, 0.0), abs=1e-9)
    assert node.fiducials_msg([], 'cam', stamp, 8).transforms == []

    laser = group_config(world.config, 'laser')
    scan = node.scan_msg(np.array([1.0, np.inf, -np.inf]), laser, 'laser', stamp, 0.1)
    assert scan.ranges == [1.0, math.inf, -math.inf]
    assert scan.angle_increment == pytest.approx(1.0 / 639)
    odom = node.odometry_msg((1.0, 2.0, math.pi / 2), 0.3, 0.1, 'odom', 'base', stamp)
    q = odom.pose.pose.orientation
    assert (q.z, q.w) == pytest.approx((math.sqrt(0.5), math.sqrt(0.5)))
    assert (odom.child_frame_id, odom.twist.twist.angular.z) == ('base', 0.1)
