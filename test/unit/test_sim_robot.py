"""DiffDrive (limits, exact arcs, collisions) and Odometry (identity start, drift)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.robot import (DiffDrive, Odometry, OdometryConfig, RobotConfig, arc,
                                      compose_pose)

RES = 0.05
#: Limits high enough that speeds are reached in one step: the motion is then analytic.
INSTANT = RobotConfig(max_linear_accel=1e6, max_angular_accel=1e6)


def room():
    """A 4 m x 3 m room (walls one cell thick: inner faces at x = 0.05, 3.95, y = 0.05, 2.95)."""
    occupied = np.zeros((60, 80), dtype=bool)
    occupied[[0, -1], :] = True
    occupied[:, [0, -1]] = True
    return GridMap.from_occupancy(occupied, RES)


def run(drive, v, w, seconds, dt=0.02, odometry=None):
    drive.command(v, w)
    for _ in range(int(round(seconds / dt))):
        distance, rotation = drive.step(dt)
        if odometry is not None:
            odometry.update(distance, rotation, dt)


def test_straight_line():
    drive = DiffDrive(INSTANT, pose=(1.0, 2.0, math.pi / 2))
    run(drive, 0.4, 0.0, 2.0)
    x, y, yaw = drive.pose
    assert (x, y, yaw) == pytest.approx((1.0, 2.8, math.pi / 2))


@settings(max_examples=30, deadline=None)
@given(st.floats(-0.5, 0.5), st.floats(0.05, 2.0), st.sampled_from([0.01, 0.02, 0.05]))
def test_arcs_are_exact_whatever_the_step(v, w, dt):
    drive = DiffDrive(INSTANT)
    run(drive, v, w, 1.0, dt)
    radius = v / w
    expected = (radius * math.sin(w), radius * (1 - math.cos(w)), w)
    assert drive.pose == pytest.approx(expected, abs=1e-9)


def test_in_place_turn():
    drive = DiffDrive(INSTANT, pose=(1.0, 1.0, 0.0))
    run(drive, 0.0, 1.5, 3.0)
    x, y, yaw = drive.pose
    assert (x, y) == (1.0, 1.0)
    assert yaw == pytest.approx(4.5 - 2 * math.pi)           # wrapped into [-pi, pi)


def test_acceleration_and_speed_limits():
    drive = DiffDrive(RobotConfig())                           # 1.0 m/s^2, 3.0 rad/s^2
    drive.command(5.0, -9.0)
    assert drive.target == (0.5, -2.0)
    drive.step(0.1)
    assert (drive.v, drive.w) == pytest.approx((0.1, -0.3))
    for _ in range(20):
        drive.step(0.1)
    assert (drive.v, drive.w) == pytest.approx((0.5, -2.0))
    drive.command(0.0, 0.0)
    drive.step(0.1)
    assert (drive.v, drive.w) == pytest.approx((0.4, -1.7))


def test_ramp_distance_matches_the_profile():
    drive = DiffDrive(RobotConfig())
    run(drive, 0.5, 0.0, 2.0, dt=0.01)
    # 0.5 s ramp at 1 m/s^2 (0.125 m + the half-step discretisation), then 1.5 s at 0.5 m/s.
    assert drive.pose[0] == pytest.approx(0.125 + 0.75, abs=0.005)


def test_non_finite_command_is_refused_and_the_old_one_kept():
    drive = DiffDrive(RobotConfig())
    drive.command(0.2, 0.1)
    with pytest.raises(ValueError):
        drive.command(math.nan, 0.0)
    assert drive.target == (0.2, 0.1)
    with pytest.raises(ValueError):
        drive.step(0.0)


def test_collision_stops_the_robot_and_counts_once_per_contact():
    drive = DiffDrive(RobotConfig(), room(), pose=(3.0, 1.5, 0.0))
    run(drive, 0.5, 0.0, 4.0)                    # keeps pushing against the wall at x = 3.95
    x = drive.pose[0]
    assert 3.95 - 0.18 - 2 * RES <= x <= 3.95 - 0.18 + RES
    assert drive.collisions == 1 and drive.v == 0.0 and drive.in_contact
    # where it began and the speed it stopped, for the log
    assert drive.last_collision[0] == pytest.approx(x) and drive.last_collision[3] > 0.4
    # Turning in place against the wall is allowed and is no new collision.
    run(drive, 0.0, 1.0, 1.0)
    assert drive.collisions == 1 and drive.pose[0] == x and drive.pose[2] > 0.5
    # Back away until clear (the episode ends), then drive into the wall again: a second one.
    run(drive, -0.3, 0.0, 1.5)
    assert not drive.in_contact and drive.collisions == 1
    run(drive, 0.5, 0.0, 4.0)
    assert drive.collisions == 2


def test_backing_away_from_a_wall_is_allowed():
    drive = DiffDrive(RobotConfig(), room(), pose=(3.78, 1.5, 0.0))
    assert not drive.fits(3.8, 1.5)
    run(drive, -0.2, 0.0, 1.0)
    assert drive.pose[0] < 3.7 and drive.collisions == 0


def exact_clearance(occupied, res, x, y):
    """Brute force: distance from (x, y) to the nearest occupied cell's square."""
    rows, cols = np.nonzero(occupied)
    dx = np.maximum(np.maximum(cols * res - x, x - (cols + 1) * res), 0.0)
    dy = np.maximum(np.maximum(rows * res - y, y - (rows + 1) * res), 0.0)
    return float(np.hypot(dx, dy).min())


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10 ** 6), x=st.floats(0.3, 2.7), y=st.floats(0.3, 1.7))
def test_clearance_is_the_distance_to_the_nearest_square(seed, x, y):
    occupied = np.random.default_rng(seed).random((20, 30)) < 0.03   # 3 m x 2 m, 0.1 m cells
    occupied[0, 0] = True
    drive = DiffDrive(RobotConfig(), GridMap.from_occupancy(occupied, 0.1))
    exact = exact_clearance(occupied, 0.1, x, y)
    edge = min(x, 3.0 - x, y, 2.0 - y)
    within = 0.18 + 2 * 0.1
    got = drive.clearance(x, y)
    if min(exact, edge) < within:
        assert got == pytest.approx(min(exact, edge), abs=1e-9)
    else:                                       # farther out: a lower bound, at least `within`
        assert within - 1e-9 <= got <= min(exact, edge) + 1e-9
    assert drive.clearance(x, y, within=math.inf) == pytest.approx(min(exact, edge), abs=1e-9)


def test_a_disc_in_the_corner_of_its_cell_passes_a_wall_corner_with_room_to_spare():
    """The Willow Garage doorway of a seed-4 trial: the wall's corner cell 0.21 m from the
    robot's centre, though 0.174 m by the centres of the two cells less half a cell."""
    occupied = np.zeros((20, 20), dtype=bool)
    occupied[1, 1] = True                                   # the square [0.1, 0.2] x [0.1, 0.2]
    drive = DiffDrive(INSTANT, GridMap.from_occupancy(occupied, 0.1), pose=(0.39, 0.40, -1.5))
    assert drive.clearance(0.39, 0.29) == pytest.approx(math.hypot(0.19, 0.09))
    run(drive, 0.3, 0.0, 0.5)                               # down past the corner, 0.19 m off
    assert drive.collisions == 0 and drive.pose[1] < 0.3
    run(drive, 0.0, 0.0, 0.1)
    drive.set_pose((0.36, 0.40, -1.5))                      # 0.16 m off: it touches
    run(drive, 0.3, 0.0, 0.5)
    assert drive.collisions == 1 and drive.pose[1] > 0.2


def test_leaving_the_map_is_a_collision():
    open_map = GridMap.from_occupancy(np.zeros((20, 20), dtype=bool), RES)   # 1 m x 1 m
    drive = DiffDrive(RobotConfig(), open_map, pose=(0.5, 0.5, 0.0))
    run(drive, 0.5, 0.0, 2.0)
    assert 1.0 - 0.18 - RES <= drive.pose[0] <= 1.0 - 0.18 and drive.collisions == 1


def test_set_pose_validates_and_stops():
    drive = DiffDrive(INSTANT)
    drive.command(0.3, 0.0)
    drive.step(0.1)
    drive.set_pose((1.0, 2.0, 7.0))
    assert drive.pose == pytest.approx((1.0, 2.0, 7.0 - 2 * math.pi))
    assert (drive.v, drive.w, drive.target) == (0.0, 0.0, (0.0, 0.0))
    with pytest.raises(ValueError):
        drive.set_pose((0.0, math.inf, 0.0))


def test_arc_and_compose():
    assert arc(1.0, 0.0) == (1.0, 0.0, 0.0)
    dx, dy, dyaw = arc(math.pi / 2, math.pi / 2)           # quarter circle of radius 1
    assert (dx, dy, dyaw) == pytest.approx((1.0, 1.0, math.pi / 2))
    assert compose_pose((1.0, 1.0, math.pi / 2), (1.0, 0.0, 0.0)) == pytest.approx(
        (1.0, 2.0, math.pi / 2))


def test_odometry_without_noise_follows_the_motion_from_identity():
    drive = DiffDrive(INSTANT, pose=(2.0, -1.0, 1.0))
    odometry = Odometry(OdometryConfig(0.0, 0.0, 0.0))
    assert odometry.pose == (0.0, 0.0, 0.0)
    run(drive, 0.3, 0.4, 3.0, odometry=odometry)
    # The odom frame is where the robot started: odom pose = start^-1 * truth.
    x, y, yaw = drive.pose
    c, s = math.cos(1.0), math.sin(1.0)
    expected = (c * (x - 2.0) + s * (y + 1.0), -s * (x - 2.0) + c * (y + 1.0), yaw - 1.0)
    assert odometry.pose == pytest.approx(expected, abs=1e-9)
    assert (odometry.v, odometry.w) == pytest.approx((0.3, 0.4))


def test_odometry_drift_is_seeded_grows_with_distance_and_not_at_rest():
    def final(seed, seconds, v):
        drive = DiffDrive(INSTANT)
        odometry = Odometry(OdometryConfig(0.05, 0.05, 0.05), np.random.default_rng(seed))
        run(drive, v, 0.0, seconds, odometry=odometry)
        return np.array(odometry.pose) - np.array(drive.pose)

    np.testing.assert_array_equal(final(1, 2.0, 0.5), final(1, 2.0, 0.5))
    assert np.all(final(2, 5.0, 0.0) == 0.0)           # standing still: no drift
    short = np.array([abs(final(seed, 1.0, 0.5)[2]) for seed in range(40)])
    long = np.array([abs(final(seed, 16.0, 0.5)[2]) for seed in range(40)])
    assert long.mean() > 2 * short.mean() > 0


def test_odometry_drift_does_not_depend_on_the_step():
    def heading_spread(dt):
        errors = []
        for seed in range(60):
            drive = DiffDrive(INSTANT)
            odometry = Odometry(OdometryConfig(0.0, 0.0, 0.1), np.random.default_rng(seed))
            run(drive, 0.5, 0.0, 4.0, dt=dt, odometry=odometry)
            errors.append(odometry.pose[2])
        return np.std(errors)

    # 2 m of travel at 0.1 rad/sqrt(m): about 0.14 rad either way.
    assert heading_spread(0.01) == pytest.approx(0.1 * math.sqrt(2), rel=0.35)
    assert heading_spread(0.1) == pytest.approx(0.1 * math.sqrt(2), rel=0.35)


def test_odometry_reset_and_bad_input():
    odometry = Odometry(OdometryConfig(0.0, 0.0, 0.0))
    odometry.update(1.0, 0.0, 1.0)
    odometry.reset()
    assert odometry.pose == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        odometry.update(math.nan, 0.0, 0.1)


def test_configs_refuse_bad_values():
    with pytest.raises(ConfigError) as error:
        config_from_params(RobotConfig, {'radius': 0.0, 'max_linear_speed': -1.0})
    assert 'radius=0.0' in str(error.value) and 'max_linear_speed=-1.0' in str(error.value)
    with pytest.raises(ConfigError) as error:
        config_from_params(OdometryConfig, {'drift_noise': -0.1})
    assert 'drift_noise=-0.1' in str(error.value)
