"""The scan miss fraction: distance map, beam end points, pairing scans with poses."""
import math

import numpy as np
import pytest
from box_room import distance_to_walls

from lost_and_found.core.lost_detector import LostDetectorConfig
from lost_and_found.core.scan_agreement import (
    DistanceMap, LaserMount, NoReturnWatch, Scan, ScanBuffer, ScanChecker, beam_reach,
    end_points, miss_counts, miss_fraction, scan_limits, through_share, through_span)

RES = 0.05


def box_room(size=4.0, res=RES):
    """A square room ``size`` m wide: walls one cell thick on the border, origin (0, 0)."""
    n = int(round(size / res))
    occupied = np.zeros((n, n), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    return DistanceMap(occupied, res)


def ray_cast_box(pose, mount, size, angles):
    """Exact ranges to the inner faces of the box walls (x, y in [RES, size - RES])."""
    x, y, yaw = pose
    lx = x + math.cos(yaw) * mount.x - math.sin(yaw) * mount.y
    ly = y + math.sin(yaw) * mount.x + math.cos(yaw) * mount.y
    return [distance_to_walls(lx, ly, yaw + mount.yaw + (-a if mount.upside_down else a),
                              RES, size - RES, RES, size - RES) for a in angles]


def scan_of(ranges, angle_min=-1.5, increment=None, range_max=10.0):
    increment = 3.0 / (len(ranges) - 1) if increment is None else increment
    return Scan(tuple(ranges), angle_min, increment, 0.05, range_max)


ANGLES = np.linspace(-1.5, 1.5, 61)


def test_distance_is_zero_on_walls_grows_inside_and_is_inf_off_the_map():
    room = box_room()
    d = room.distance([0.02, 1.0, 2.0, -1.0, 5.0], [2.0, 2.0, 2.0, 2.0, 2.0])
    assert d[0] == 0.0
    assert d[1] == pytest.approx(1.0 - RES / 2, abs=RES)
    assert d[2] > d[1]
    assert math.isinf(d[3]) and math.isinf(d[4])


def test_origin_yaw_rotates_the_grid():
    occupied = np.zeros((10, 20), dtype=bool)
    occupied[0, 19] = True                          # cell at +x end of the first row
    rotated = DistanceMap(occupied, 0.1, (1.0, 1.0, math.pi / 2))
    # cell (row 0, col 19) has its centre 1.95 m along the grid x axis = map +y
    assert rotated.distance([0.95], [2.95])[0] == 0.0
    assert math.isinf(rotated.distance([2.95], [0.95])[0])


def test_from_occupancy_grid_counts_only_occupied_values():
    data = [0, -1, 100, 50, 65, 0]
    dmap = DistanceMap.from_occupancy_grid(data, 3, 2, 1.0, (0.0, 0.0, 0.0))
    assert dmap.occupied_cells == 2
    with pytest.raises(ValueError, match='expected width 4 x height 2'):
        DistanceMap.from_occupancy_grid(data, 4, 2, 1.0, (0.0, 0.0, 0.0))


@pytest.mark.parametrize('kwargs,match', [
    ({'occupied': np.zeros((0, 3), dtype=bool)}, 'non-empty 2D'),
    ({'resolution': 0.0}, 'resolution'),
    ({'resolution': float('nan')}, 'resolution'),
    ({'origin': (0.0, float('inf'), 0.0)}, 'origin'),
])
def test_bad_maps_are_refused_with_the_value(kwargs, match):
    args = {'occupied': np.ones((3, 3), dtype=bool), 'resolution': 0.05,
            'origin': (0.0, 0.0, 0.0)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        DistanceMap(**args)


@pytest.mark.parametrize('mount', [LaserMount(), LaserMount(0.1, 0.02, 0.3),
                                   LaserMount(0.1, 0.0, 0.0, upside_down=True)])
def test_right_pose_hits_and_wrong_pose_misses(mount):
    room = box_room()
    truth = (1.2, 1.5, 0.4)
    scan = scan_of(ray_cast_box(truth, mount, 4.0, ANGLES))
    miss, beams = miss_fraction(room, truth, mount, scan, 0.1, 100, 10)
    assert miss == 0.0 and beams == len(ANGLES)
    wrong, _ = miss_fraction(room, (2.6, 2.2, 2.0), mount, scan, 0.1, 100, 10)
    assert wrong > 0.5


def test_unusable_beams_are_skipped_and_too_few_give_none():
    room = box_room()
    truth = (2.0, 2.0, 0.0)
    ranges = ray_cast_box(truth, LaserMount(), 4.0, ANGLES)
    ranges[:40] = [float('nan')] * 20 + [10.0] * 10 + [0.01] * 10   # NaN, max range, too near
    scan = scan_of(ranges)
    miss, beams = miss_fraction(room, truth, LaserMount(), scan, 0.1, 100, 10)
    assert (miss, beams) == (0.0, len(ANGLES) - 40)
    assert miss_fraction(room, truth, LaserMount(), scan, 0.1, 100, 30) is None


def test_subsampling_keeps_at_most_max_beams_spread_over_the_scan():
    scan = scan_of([2.0] * 61)
    xs, ys = end_points((0.0, 0.0, 0.0), LaserMount(), scan, 7)
    assert len(xs) == 7
    headings = np.arctan2(ys, xs)
    assert headings[0] == pytest.approx(-1.5) and headings[-1] == pytest.approx(1.5)


def test_buffer_pairs_the_nearest_scan_within_the_age_and_forgets_on_a_clock_jump():
    buffer = ScanBuffer(3, 0.05)
    assert not buffer.may_still_come(1.0)             # no scan at all: do not wait
    for t in (1.0, 1.1, 1.2, 1.3):
        buffer.add(t, t)
    assert buffer.match(1.0) is None                 # dropped: only 3 kept
    assert buffer.match(1.21) == 1.2
    assert buffer.match(1.4) is None                 # too far from any
    assert buffer.may_still_come(1.4) and not buffer.may_still_come(1.25)
    buffer.add(0.5, 'after jump')
    assert buffer.match(1.3) is None and buffer.match(0.5) == 'after jump'


def test_checker_pairs_a_pose_two_seconds_late_at_a_kinects_rate():
    """A busy computer's amcl may publish a pose well after its scan: at 30 Hz, the checker
    still has that scan 2 s (60 scans) later, not 61 (stamps paired within 0.01 s here)."""
    checker = ScanChecker(0.1, 100, 10, 0.01)
    checker.distance_map = box_room()
    truth = (2.0, 2.0, 0.0)
    scan = scan_of(ray_cast_box(truth, LaserMount(), 4.0, ANGLES))
    for i in range(61):
        checker.add_scan(1.0 + i / 30.0, scan, LaserMount())
    assert checker.feature(1.0, truth) is None                  # 61 scans: the first is gone
    assert checker.feature(1.0 + 1 / 30.0, truth) == 0.0        # 60 scans, 2 s, kept


def test_checker_says_why_it_has_no_feature():
    checker = ScanChecker(0.1, 100, 10, 0.05)
    assert checker.feature(1.0, (2.0, 2.0, 0.0)) is None and checker.reason == 'no map yet'
    checker.distance_map = box_room()
    assert checker.feature(1.0, (2.0, 2.0, 0.0)) is None and 'no scan' in checker.reason
    assert not checker.waiting                       # no scan ever: nothing to wait for
    truth = (2.0, 2.0, 0.0)
    checker.add_scan(1.0, scan_of(ray_cast_box(truth, LaserMount(), 4.0, ANGLES)), LaserMount())
    assert checker.feature(1.0, truth) == 0.0 and checker.reason == ''
    assert checker.feature(1.1, truth) is None and checker.waiting
    checker.add_scan(1.1, scan_of([float('nan')] * 61), LaserMount())
    assert checker.feature(1.1, truth) is None and 'usable beams' in checker.reason


def partitioned_room():
    """The 4 m box room with a wall one cell thick across it at x = 2.0 m (the cells of
    column 40), with no door."""
    n = int(round(4.0 / RES))
    occupied = np.zeros((n, n), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    occupied[:, 40] = True
    return DistanceMap(occupied, RES)


def test_crosses_obstacle_finds_a_wall_one_cell_thick_at_any_angle():
    room = partitioned_room()
    angles = np.linspace(-1.2, 1.2, 25)
    # From x = 1.0 to x = 3.0: every segment runs through the partition at x in [2.0, 2.05).
    xs, ys = 1.0 + 2.0 * np.ones_like(angles), 2.0 + 2.0 * np.tan(angles) / 4.0
    assert room.crosses_obstacle(1.0, 2.0, xs, ys).all()
    # Segments that stay on one side, or end just before the partition, cross nothing.
    assert not room.crosses_obstacle(1.0, 2.0, [1.9, 1.0, 0.5], [2.0, 3.5, 0.5]).any()
    assert not room.crosses_obstacle(1.0, 2.0, [1.0], [2.0]).any()     # zero length


def test_crosses_obstacle_ignores_what_lies_off_the_map():
    room = box_room()
    # From inside through the border wall: crosses. Entirely off the map: nothing to cross.
    assert room.crosses_obstacle(2.0, 2.0, [5.0], [2.0])[0]
    assert not room.crosses_obstacle(-3.0, -3.0, [-1.0], [-3.0])[0]
    empty = DistanceMap(np.zeros((10, 10), dtype=bool), 0.1)
    assert not empty.crosses_obstacle(0.5, 0.5, [0.9], [0.9])[0]


def test_clutter_is_a_short_miss_counted_only_by_its_weight():
    room = box_room()
    truth = (1.0, 2.0, 0.0)
    ranges = ray_cast_box(truth, LaserMount(), 4.0, ANGLES)
    # An unmapped box 1 m ahead blocks the middle third of the beams.
    ranges[20:41] = [1.0] * 21
    scan = scan_of(ranges)
    every, beams = miss_fraction(room, truth, LaserMount(), scan, 0.1, 100, 10, 1.0)
    assert every == pytest.approx(21 / 61) and beams == 61
    through_only, _ = miss_fraction(room, truth, LaserMount(), scan, 0.1, 100, 10, 0.0)
    assert through_only == 0.0


def test_through_misses_are_beams_through_a_wall_or_off_the_map():
    room = partitioned_room()
    truth = (3.0, 2.0, 0.0)                       # right half: the far wall 0.95 m ahead
    scan = scan_of([0.95] * 61, angle_min=-0.3, increment=0.01)
    for weight in (1.0, 0.0):
        assert miss_fraction(room, truth, LaserMount(), scan, 0.1, 100, 10, weight)[0] == 0.0
    # Placed 1.5 m further back, in the left half, the beams end in free space 0.55 m short
    # of the partition: misses by their end points, but nothing was passed through.
    short = (0.5, 2.0, 0.0)
    assert miss_fraction(room, short, LaserMount(), scan, 0.1, 100, 10, 1.0)[0] == 1.0
    assert miss_fraction(room, short, LaserMount(), scan, 0.1, 100, 10, 0.0)[0] == 0.0
    # Placed 0.5 m before the partition, they end 0.45 m behind it: through the wall.
    through = (1.5, 2.0, 0.0)
    assert miss_fraction(room, through, LaserMount(), scan, 0.1, 100, 10, 0.0)[0] == 1.0
    # Placed 0.5 m before the outer wall, they end off the map: through misses too.
    off = (3.5, 2.0, 0.0)
    assert miss_fraction(room, off, LaserMount(), scan, 0.1, 100, 10, 0.0)[0] == 1.0


def test_through_span_is_how_far_apart_the_beams_enter_the_walls_they_pass_through():
    room = partitioned_room()
    pose = (1.5, 2.0, 0.0)                        # 0.5 m before the partition at x = 2.0
    wide = scan_of([0.95] * 61, angle_min=-0.3, increment=0.01)
    # Every beam ends 0.45 m behind the partition: they enter it across 2 * 0.5 * tan(0.3).
    assert through_span(room, pose, LaserMount(), wide, 0.1, 100, 10) == pytest.approx(
        math.tan(0.3), abs=0.03)
    # Only the middle 11 beams pass (an opening the map has shut): a few centimetres apart.
    ranges = [0.5] * 25 + [0.95] * 11 + [0.5] * 25
    opening = through_span(room, pose, LaserMount(), scan_of(ranges, -0.3, 0.01), 0.1, 100, 10)
    assert opening == pytest.approx(2 * 0.5 * math.tan(0.05), abs=0.03)
    # Beams that leave the map through its outer wall (its inner face 0.45 m ahead) entered
    # that wall.
    assert through_span(room, (3.5, 2.0, 0.0), LaserMount(), wide, 0.1, 100, 10) == \
        pytest.approx(2 * 0.45 * math.tan(0.3), abs=0.03)
    # One beam through, or none: no span.
    one = [0.5] * 30 + [0.95] + [0.5] * 30
    assert through_span(room, pose, LaserMount(), scan_of(one, -0.3, 0.01), 0.1, 100, 10) == 0.0
    assert through_span(room, pose, LaserMount(), scan_of([0.5] * 61, -0.3, 0.01), 0.1, 100,
                        10) == 0.0
    # Beams that leave a map with no outer wall cross nothing on their way: no span.
    open_room = DistanceMap(np.pad(np.ones((1, 1), dtype=bool), ((0, 79), (0, 79))), RES)
    assert through_span(open_room, (3.5, 2.0, 0.0), LaserMount(), wide, 0.1, 100, 10) == 0.0
    # Too few usable beams: no evidence.
    assert through_span(room, pose, LaserMount(), wide, 0.1, 100, 62) is None


def test_the_checker_gives_the_span_of_the_scan_stamped_like_the_pose():
    checker = ScanChecker(0.1, 100, 10, 0.05)
    assert checker.measure_with_span(1.0, (1.5, 2.0, 0.0)) is None and \
        checker.reason == 'no map yet'
    checker.distance_map = partitioned_room()
    scan = scan_of([0.95] * 61, angle_min=-0.3, increment=0.01)
    checker.add_scan(1.0, scan, LaserMount())
    # One pass gives the fractions measure gives, and the span through_span gives.
    through, short, span = checker.measure_with_span(1.0, (1.5, 2.0, 0.0))
    assert span == pytest.approx(math.tan(0.3), abs=0.03)
    assert (through, short) == checker.measure(1.0, (1.5, 2.0, 0.0)) == (1.0, 0.0)
    assert span == through_span(checker.distance_map, (1.5, 2.0, 0.0), LaserMount(), scan, 0.1,
                                100, 10)
    assert checker.measure_with_span(3.0, (1.5, 2.0, 0.0)) is None and \
        'no scan stamped' in checker.reason


def test_through_share_is_of_the_beams_that_reached_and_clutter_leaves_it_alone():
    room = box_room()
    truth = (1.0, 2.0, 0.0)
    ranges = ray_cast_box(truth, LaserMount(), 4.0, ANGLES)
    ranges[20:41] = [1.0] * 21                    # an unmapped box: short misses only
    through, short, beams = miss_counts(room, truth, LaserMount(), scan_of(ranges), 0.1, 100,
                                        10)
    assert through == 0 and short == 21
    assert through_share(through / beams, short / beams, 0.2) == 0.0
    # 1 through and 3 short in 10 beams: 1 of the 7 that reached went through.
    assert through_share(0.1, 0.3, 0.2) == pytest.approx(1 / 7)
    assert through_share(0.5, 0.0, 0.2) == 0.5
    # Fewer beams reached than min_reach: no share (the box filled the view).
    assert through_share(0.05, 0.85, 0.2) is None
    assert through_share(0.0, 1.0, 0.2) is None
    assert through_share(0.2, 0.8, 0.2) == pytest.approx(1.0)
    # Not fractions: no share (never a "lost" verdict from bad input).
    for bad in ((float('nan'), 0.1), (0.1, float('nan')), (1.5, 0.0), (0.1, -0.2), (None, 0.1)):
        assert through_share(bad[0], bad[1], 0.2) is None


def test_open_beams_agree_where_the_map_is_open_and_miss_where_it_has_a_wall():
    """A box fills the middle of a view that is otherwise open (no return within a 1.5 m
    range_max): without open beams the box is the whole scan; with them the open beams agree
    with the map at the right pose, and run through a wall at a pose 1.2 m from one."""
    room = box_room()
    truth = (2.0, 2.0, 0.0)                       # 1.95 m from every wall: nothing in range
    ranges = [math.inf] * 61
    ranges[25:36] = [1.0] * 11                    # an unmapped box 1 m ahead, +-0.25 rad
    scan = scan_of(ranges, range_max=1.5)
    assert miss_counts(room, truth, LaserMount(), scan, 0.1, 100, 10) == (0, 11, 11)
    assert miss_counts(room, truth, LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) == (0, 11, 61)
    # 1.2 m from the wall ahead (its cells start at x = 3.95), the open rays (1.4 m: range_max
    # less the tolerance) reach it within 0.54 rad of the axis: those at 0.3-0.5 rad on
    # either side (the box's beams are not open, and end short of the wall).
    near_wall = (2.75, 2.0, 0.0)
    assert miss_counts(room, near_wall, LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) == (10, 11, 61)


def test_open_beams_are_inf_or_range_max_never_nan_and_count_towards_min_beams():
    room = box_room()
    scan = scan_of([math.inf] * 5 + [1.5] * 5 + [math.nan] * 20 + [-math.inf] * 31,
                   range_max=1.5)
    assert miss_counts(room, (2.0, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 10) is None
    assert miss_counts(room, (2.0, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) == (0, 0, 10)
    # A wall just inside range_max (within the tolerance) is no evidence either way.
    beside = (2.0 + 1.95 - 1.45, 2.0, 0.0)        # the wall ahead 1.45 m away
    scan = scan_of([math.inf] * 61, angle_min=-0.01, increment=0.0003, range_max=1.5)
    assert miss_counts(room, beside, LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) == (0, 0, 61)


def test_scan_limits_are_floats_and_a_negative_range_min_is_zero():
    assert scan_limits(Scan((), -1, 1, -0.5, 4)) == (-1.0, 1.0, 0.0, 4.0)
    assert scan_limits(Scan((), 0.5, -0.01, 0.45, 8.0)) == (0.5, -0.01, 0.45, 8.0)


@pytest.mark.parametrize('fields, match', [
    ((math.nan, 0.01, 0.1, 5.0), 'angle_min=nan'),
    ((0.0, 0.0, 0.1, 5.0), 'angle_increment=0.0'),
    ((0.0, math.inf, 0.1, 5.0), 'angle_increment=inf'),
    ((0.0, 0.01, math.nan, 5.0), 'range_min=nan'),
    ((0.0, 0.01, 0.1, math.inf), 'range_max=inf'),
    ((0.0, 0.01, 0.1, 0.0), 'range_max=0.0'),
])
def test_bad_scan_limits_are_refused_with_the_value(fields, match):
    with pytest.raises(ValueError, match=match):
        scan_limits(Scan((), *fields))


def test_beam_reach_is_the_return_range_max_without_one_and_nan_for_nothing():
    ranges = np.array([1.0, math.inf, 7.0, math.nan, -math.inf, 0.2, 5.0, 0.5])
    hit, reach = beam_reach(ranges, 0.5, 5.0)
    assert hit.tolist() == [True, False, False, False, False, False, True, True]
    np.testing.assert_array_equal(reach, [1.0, 5.0, 5.0, math.nan, math.nan, math.nan, 5.0, 0.5])


@pytest.mark.parametrize('range_max', [0.0, math.inf, math.nan, 0.01])
def test_a_scan_without_a_usable_range_max_has_no_open_beams(range_max):
    scan = Scan(tuple([math.inf] * 61), -1.5, 0.05, 0.05, range_max)
    assert miss_counts(box_room(), (2.0, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) is None


def test_open_rays_stop_at_the_map_edge():
    """A laser with a huge range_max casts no farther than the map's far corner (it would find
    nothing mapped beyond it), and a ray off the map is no miss."""
    room = box_room()
    scan = scan_of([math.inf] * 61, range_max=1000.0)
    outside = (-3.0, 2.0, math.pi)               # looking away from the room
    assert miss_counts(room, outside, LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) == (0, 0, 61)
    assert room.reach(0.0, 0.0) == pytest.approx(4.0 * math.sqrt(2.0))
    inside = (2.0, 2.0, 0.0)                     # every ray meets a wall: all through
    assert miss_counts(room, inside, LaserMount(), scan, 0.1, 100, 10,
                       open_beams=True) == (61, 0, 61)


def test_a_laser_inside_a_wall_sees_through_it():
    room = partitioned_room()
    # Every end point lies 0.5 m or more from the partition the laser sits in.
    scan = scan_of([0.6] * 61, angle_min=-0.3, increment=0.01)
    miss, _ = miss_fraction(room, (2.02, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 10)
    assert miss == 1.0


def test_miss_counts_split_the_misses_and_the_weight_mixes_them():
    room = partitioned_room()
    # Half the beams end 0.45 m behind the partition (through it), half 0.3 m short of it.
    scan = scan_of([0.95] * 30 + [0.2] * 31, angle_min=-0.3, increment=0.01)
    through, short, beams = miss_counts(room, (1.5, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 10)
    assert beams == 61 and short == 31 and through == 30
    for weight in (0.0, 0.5, 1.0):
        miss, _ = miss_fraction(room, (1.5, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 10, weight)
        assert miss == pytest.approx((30 + weight * 31) / 61)
    assert miss_counts(room, (1.5, 2.0, 0.0), LaserMount(), scan, 0.1, 100, 62) is None


@pytest.mark.parametrize('weight', [-0.1, 1.5, float('nan'), 'half', True])
def test_a_short_weight_outside_zero_to_one_is_refused(weight):
    with pytest.raises(ValueError, match='short_weight=%r' % (weight,)):
        miss_fraction(box_room(), (2.0, 2.0, 0.0), LaserMount(), scan_of([1.0] * 61), 0.1,
                      100, 10, weight)
    with pytest.raises(ValueError, match='short_weight'):
        ScanChecker(0.1, 100, 10, 0.05, short_weight=weight)


def test_the_checker_measures_both_kinds_and_weighs_them():
    checker = ScanChecker(0.1, 100, 10, 0.05, short_weight=0.5)
    checker.distance_map = partitioned_room()
    ranges = [0.95] * 30 + [0.2] * 31
    checker.add_scan(1.0, scan_of(ranges, angle_min=-0.3, increment=0.01), LaserMount())
    through, short = checker.measure(1.0, (1.5, 2.0, 0.0))
    assert (through, short) == (pytest.approx(30 / 61), pytest.approx(31 / 61))
    assert checker.feature(1.0, (1.5, 2.0, 0.0)) == pytest.approx((30 + 0.5 * 31) / 61)


def test_beams_shorter_than_min_range_are_not_used():
    room = box_room()
    # A box right in front of the laser stops half the beams at 0.4 m, in free space; the
    # other half reach the walls.
    pose = (2.0, 2.0, 0.0)
    ranges = ray_cast_box(pose, LaserMount(), 4.0, ANGLES)
    blocked = [0.4 if abs(a) < 0.75 else r for a, r in zip(ANGLES, ranges)]
    scan = scan_of(blocked)
    through, short, beams = miss_counts(room, pose, LaserMount(), scan, 0.1, 100, 10)
    assert through == 0 and short == 29 and beams == 61
    through, short, beams = miss_counts(room, pose, LaserMount(), scan, 0.1, 100, 10,
                                        min_range=0.5)
    assert (through, short, beams) == (0, 0, 32)
    # Every beam near: no feature, and the checker says why.
    near = scan_of([0.4] * 61)
    assert miss_counts(room, pose, LaserMount(), near, 0.1, 100, 10, min_range=0.5) is None
    checker = ScanChecker(0.1, 100, 10, 0.05, min_range=0.5)
    checker.distance_map = room
    checker.add_scan(1.0, near, LaserMount())
    assert checker.feature(1.0, pose) is None
    assert checker.reason == 'fewer than 10 usable beams beyond 0.50 m'
    # measure() at another min_range for one call, without changing the checker's own.
    assert checker.measure(1.0, pose, 0.0) == (0.0, 1.0)
    assert checker.measure(1.0, pose) is None and checker.min_range == 0.5


@pytest.mark.parametrize('min_range', [-0.1, float('inf'), float('nan'), 'near', None])
def test_a_bad_min_range_is_refused(min_range):
    with pytest.raises(ValueError, match='min_range'):
        miss_fraction(box_room(), (2.0, 2.0, 0.0), LaserMount(), scan_of([1.0] * 61), 0.1,
                      100, 10, 1.0, min_range)
    with pytest.raises(ValueError, match='min_range'):
        ScanChecker(0.1, 100, 10, 0.05, min_range=min_range)


# ----------------------------------------------------------------------------- NoReturnWatch

def watch_scan(*ranges):
    return Scan(ranges, -0.5, 0.1, 0.45, 5.0)


def test_no_return_watch_warns_once_about_a_laser_that_reports_no_return_as_nan():
    watch = NoReturnWatch(3)
    nan = float('nan')
    assert watch.add(watch_scan(1.0, 2.0, 3.0)) is None       # no NaN: not counted
    assert watch.add(watch_scan(1.0, nan, 3.0)) is None
    assert watch.add(watch_scan(nan, nan, 3.0)) is None
    warning = watch.add(watch_scan(1.0, nan, nan))
    assert 'NaN' in warning and '3 scans' in warning and 'config/lost_detector.yaml' in warning
    assert watch.add(watch_scan(nan, nan, nan)) is None       # once
    assert watch.invalid_scans == 3


def test_no_return_watch_counts_zeros_below_range_min_but_not_rep117_minus_inf():
    watch = NoReturnWatch(2)
    assert watch.add(watch_scan(1.0, float('-inf'), 3.0)) is None    # too near, REP 117
    assert watch.add(watch_scan(1.0, 0.0, 3.0)) is None              # a driver's 0
    assert 'or 0' in watch.add(watch_scan(0.0, 0.0, 3.0))


@pytest.mark.parametrize('open_beam', [float('inf'), 5.0, 7.5])
def test_no_return_watch_is_settled_by_one_beam_without_a_return(open_beam):
    watch = NoReturnWatch(2)
    nan = float('nan')
    assert watch.add(watch_scan(1.0, nan, 3.0)) is None
    assert watch.add(watch_scan(open_beam, nan, 3.0)) is None  # +inf or >= range_max
    for _ in range(5):
        assert watch.add(watch_scan(nan, nan, nan)) is None
    assert watch.settled and watch.invalid_scans == 1


@pytest.mark.parametrize('scans', [0, -1, 2.5, True, '3'])
def test_no_return_watch_refuses_a_bad_count(scans):
    with pytest.raises(ValueError, match='scans='):
        NoReturnWatch(scans)


@pytest.mark.parametrize('range_min, range_max', [(0.45, float('inf')), (0.45, 0.45), (0.0, 0.0)])
def test_no_return_watch_needs_beams_open_beams_can_use(range_min, range_max):
    """A scan whose range_max is not a finite number above range_min has no open beams (as
    rays() uses them), so its +inf or long readings settle nothing."""
    watch = NoReturnWatch(2)
    nan = float('nan')
    assert watch.add(Scan((float('inf'), nan, 3.0), -0.5, 0.1, range_min, range_max)) is None
    assert watch.add(Scan((9.0, nan, 3.0), -0.5, 0.1, range_min, range_max)) is not None


def corridor_to_the_edge():
    """A corridor 4 m long and 2 m wide (0.05 m cells): walls one cell thick along both sides
    and across its east end; its west end runs off the grid (free to the edge, no wall), and a
    block of unknown cells (x 2.5-3.0 m, y 0.5-1.5 m) stands in it."""
    occupied = np.zeros((40, 80), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, -1] = True
    free = ~occupied
    free[10:30, 50:60] = False
    return DistanceMap(occupied, RES, free=free)


def test_beams_that_end_in_unmapped_space_are_left_out_with_unmapped_ends():
    corridor = corridor_to_the_edge()
    west, east = (2.0, 1.0, math.pi), (1.0, 1.0, 0.0)

    def counts(pose, reach, unmapped_ends):
        scan = scan_of([reach] * 21, angle_min=-0.1, increment=0.01)
        return miss_counts(corridor, pose, LaserMount(), scan, 0.1, 100, 10,
                           unmapped_ends=unmapped_ends)
    # Down the corridor past the grid's west edge: through misses by default; with
    # unmapped_ends no beam is left to judge by.
    assert counts(west, 2.4, False) == (21, 0, 21)
    assert counts(west, 2.4, True) is None
    # Ending on the map just inside its edge (within hit_tolerance of it): short misses, or
    # left out.
    assert counts(west, 1.95, False) == (0, 21, 21)
    assert counts(west, 1.95, True) is None
    # Into the unknown block: short misses, or left out; 0.5 m short of it they stay short.
    assert counts(east, 1.75, False) == (0, 21, 21)
    assert counts(east, 1.75, True) is None
    assert counts(east, 1.0, True) == (0, 21, 21)
    # Through the east wall and off the map: through misses either way.
    assert counts((3.5, 1.0, 0.0), 1.0, False) == counts((3.5, 1.0, 0.0), 1.0, True) == \
        (21, 0, 21)
    # Left out, they are not among the beams: the rest are judged alone.
    mixed = scan_of([1.0] * 11 + [1.75] * 10, angle_min=-0.1, increment=0.01)
    assert miss_counts(corridor, east, LaserMount(), mixed, 0.1, 100, 10) == (0, 21, 21)
    assert miss_counts(corridor, east, LaserMount(), mixed, 0.1, 100, 10,
                       unmapped_ends=True) == (0, 11, 11)
    # Beams through a mapped wall enter it where they did either way: the same span.
    through = scan_of([1.0] * 21, angle_min=-0.1, increment=0.01)
    spans = [through_span(corridor, (3.5, 1.0, 0.0), LaserMount(), through, 0.1, 100, 10,
                          unmapped_ends=unmapped) for unmapped in (False, True)]
    assert spans[0] == spans[1] == pytest.approx(0.1, abs=0.02)


def test_near_unmapped_is_off_the_map_or_near_unknown_cells_or_the_edge():
    corridor = corridor_to_the_edge()
    xs = [-0.1, 0.02, 0.3, 2.6, 2.45, 2.3, 2.0]
    ys = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert corridor.near_unmapped(xs, ys, 0.1).tolist() == [
        True, True, False, True, True, False, False]
    # A map that knows every cell it holds has only its edge.
    known = DistanceMap(np.zeros((10, 10), dtype=bool), 0.1)
    assert known.near_unmapped([0.05, 0.5, 1.2], [0.5, 0.5, 0.5], 0.1).tolist() == [
        True, False, True]


def test_the_checker_leaves_out_beams_that_end_in_unmapped_space_with_unmapped_ends():
    # From (1, 1) facing east: 11 beams return from the east wall, 10 end in the unknown block.
    scan = scan_of([2.95] * 11 + [1.75] * 10, angle_min=-0.1, increment=0.01)
    measured = []
    for unmapped in (False, True):
        checker = ScanChecker(0.1, 100, 10, 0.05, unmapped_ends=unmapped)
        checker.distance_map = corridor_to_the_edge()
        checker.add_scan(1.0, scan, LaserMount())
        measured.append(checker.measure_with_span(1.0, (1.0, 1.0, 0.0)))
    # The 10 beams into the unknown block are short misses, or not used.
    assert measured[0] == (0.0, pytest.approx(10 / 21), 0.0)
    assert measured[1] == (0.0, 0.0, 0.0)
    assert checker.unmapped_ends and ScanChecker.from_config(
        LostDetectorConfig(unmapped_ends=True)).unmapped_ends


def test_on_a_map_without_obstacles_beams_that_end_on_it_are_short_misses():
    dmap = DistanceMap(np.zeros((80, 80), dtype=bool), RES)        # 4 x 4 m, all free
    scan = scan_of([1.0] * 61)
    through, short, beams = miss_counts(dmap, (2.0, 2.0, 0.0), LaserMount(), scan, 0.1, 61, 10)
    assert (through, short, beams) == (0, 61, 61)
    # Beams that leave it are through misses, as on any map.
    through, short, beams = miss_counts(dmap, (2.0, 2.0, 0.0), LaserMount(), scan_of([3.0] * 61),
                                        0.1, 61, 10)
    assert (through, short) == (61, 0)


@pytest.mark.parametrize('pose, scan', [
    ((float('nan'), 2.0, 0.0), scan_of([1.0] * 61)),
    ((2.0, 2.0, float('inf')), scan_of([1.0] * 61)),
    ((2.0, 2.0, 0.0), scan_of([1.0] * 61, angle_min=float('nan'))),
    ((2.0, 2.0, 0.0), scan_of([1.0] * 61, increment=float('nan'))),
])
@pytest.mark.parametrize('options', [{}, {'unmapped_ends': True}])
def test_a_pose_or_scan_geometry_that_is_not_finite_gives_no_feature(pose, scan, options):
    checker = ScanChecker(0.1, 61, 10, 0.01, **options)
    checker.distance_map = box_room()
    checker.add_scan(1.0, scan, LaserMount())
    assert checker.measure(1.0, pose) is None
    assert checker.measure_with_span(1.0, pose) is None
    assert checker.reason == 'a pose or scan geometry that is not finite'
    # The same scan from a finite pose is measured when its own angles are finite.
    good = math.isfinite(scan.angle_min) and math.isfinite(scan.angle_increment)
    assert (checker.measure(1.0, (2.0, 2.0, 0.0)) is not None) == good


def test_a_wild_range_is_followed_only_as_far_as_the_map_reaches():
    dmap = box_room()
    # A driver's absurd return 1e12 m away: the segment's samples stop at the map's far
    # corner (not 1e13 of them), and the beam counts as through the wall it left by.
    crossed = dmap.crosses_obstacle(2.0, 2.0, np.array([1e12, 3.0]), np.array([2.0, 2.0]))
    assert crossed.tolist() == [True, False]
    sx, _sy = dmap._samples(2.0, 2.0, np.array([1e12]), np.array([2.0]))
    assert sx.shape[1] <= math.ceil(dmap.reach(2.0, 2.0) / (RES / 2.0)) + 1
