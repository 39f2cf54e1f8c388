"""Unit tests for core/reactive.py: gap finding and the laser-only wander state machine.

Scans are synthesised with numpy: a ray caster against line segments in the world frame, for a
TurtleBot2 Kinect fake laser (640 beams over +-0.52 rad, 0.45..10 m) and a 360 degree lidar.
"""
import logging
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lost_and_found.core.config import ConfigError
from lost_and_found.core.reactive import (
    ReactiveConfig, ReactiveState, ReactiveWander, Scan, Span, find_spans, normalize_angle)

CFG = ReactiveConfig()
KINECT_N = 640
KINECT_FOV = 0.52
LIDAR_N = 360


def kinect_angles():
    """Beam angles of the Kinect fake laser."""
    return np.linspace(-KINECT_FOV, KINECT_FOV, KINECT_N)


def kinect_scan(ranges, flip=False):
    """A Kinect-like Scan; ``flip`` reverses the beam order (negative increment)."""
    inc = 2 * KINECT_FOV / (KINECT_N - 1)
    if flip:
        return Scan(np.asarray(ranges)[::-1], KINECT_FOV, -inc, 0.45, 10.0)
    return Scan(np.asarray(ranges), -KINECT_FOV, inc, 0.45, 10.0)


def lidar_angles():
    """Beam angles of the 360 degree lidar, starting behind the robot at -pi."""
    return -math.pi + np.arange(LIDAR_N) * (2 * math.pi / LIDAR_N)


def lidar_scan(ranges):
    """A 360 degree Scan (index 0 points backwards)."""
    return Scan(np.asarray(ranges), -math.pi, 2 * math.pi / LIDAR_N, 0.12, 10.0)


def cast(angles, segments, pose=(0.0, 0.0, 0.0), range_max=10.0):
    """Ray-cast beams at ``angles`` (robot frame) from ``pose`` against world segments.

    Returns inf where a beam hits nothing within ``range_max``.
    """
    x, y, th = pose
    out = np.full(len(angles), np.inf)
    for i, a in enumerate(angles):
        dx, dy = math.cos(th + a), math.sin(th + a)
        for (x1, y1), (x2, y2) in segments:
            ex, ey = x2 - x1, y2 - y1
            den = dx * ey - dy * ex
            if abs(den) < 1e-12:
                continue
            # Solve pose + r*d = p1 + u*e.
            r = ((x1 - x) * ey - (y1 - y) * ex) / den
            u = ((x1 - x) * dy - (y1 - y) * dx) / den
            if r > 0 and 0 <= u <= 1 and r < out[i]:
                out[i] = r
    out[out > range_max] = np.inf
    return out


def angle_dist(a, b):
    """Absolute angular distance between two angles."""
    return abs(normalize_angle(a - b))


# --- find_spans ------------------------------------------------------------------------------

def test_open_field_one_span_straight_ahead():
    """No obstacle in view: one span covering the FOV, best direction straight ahead."""
    spans = find_spans(kinect_scan(np.full(KINECT_N, np.inf)), CFG)
    assert len(spans) == 1
    span = spans[0]
    assert isinstance(span, Span)
    assert abs(span.best_angle) < 0.01
    assert span.best_range == 10.0                   # inf counted as range_max
    assert 0.9 < span.width < 2 * KINECT_FOV          # shrunk a little at the FOV edges


def test_open_field_360_is_one_unshrunk_circle():
    """All-clear 360 scan: one span, the full circle, nothing to shrink for."""
    spans = find_spans(lidar_scan(np.full(LIDAR_N, np.inf)), CFG)
    assert len(spans) == 1
    assert spans[0].width == pytest.approx(2 * math.pi, abs=0.02)
    assert angle_dist(spans[0].best_angle, 0.0) < 0.01


def test_corridor_kinect_points_down_the_corridor():
    """Walls at y=+-0.6 along x: a single span whose best direction is along the corridor."""
    walls = [((-1.0, 0.6), (50.0, 0.6)), ((-1.0, -0.6), (50.0, -0.6))]
    spans = find_spans(kinect_scan(cast(kinect_angles(), walls)), CFG)
    assert len(spans) == 1
    assert abs(spans[0].best_angle) < 0.07


def test_corridor_360_gaps_ahead_and_behind_not_sideways():
    """In a 1 m corridor a 360 lidar sees gaps ahead and behind and none at the side walls.

    At a grazing angle a wall's adjacent ranges differ by more than ``discontinuity`` at 1 degree
    resolution, so the corridor may split into several spans (a documented limitation); all of
    them must still lie along the corridor.
    """
    walls = [((-50.0, 0.5), (50.0, 0.5)), ((-50.0, -0.5), (50.0, -0.5))]
    spans = find_spans(lidar_scan(cast(lidar_angles(), walls)), CFG)
    bests = [s.best_angle for s in spans]
    assert min(angle_dist(b, 0.0) for b in bests) < 0.01           # one straight ahead
    assert min(angle_dist(b, math.pi) for b in bests) < 0.03       # one straight behind
    for span in spans:
        for edge in (span.angle_start, span.angle_end):
            # The side walls are within 0.6 m for |angle| in [56, 124] deg: never in a span.
            assert not 0.97 < abs(normalize_angle(edge)) < 2.17


def test_corner_best_span_to_the_left():
    """Wall ahead and wall on the right: the best gap is on the left."""
    walls = [((1.0, -50.0), (1.0, 50.0)), ((-50.0, -0.5), (50.0, -0.5))]
    spans = find_spans(lidar_scan(cast(lidar_angles(), walls)), CFG)
    assert spans
    assert spans[0].best_angle > 0.5
    assert spans[0].best_angle < math.pi - 0.3


def door_ranges(width, centre=0.0, distance=1.5):
    """Kinect ranges facing a wall at ``distance`` with a door of ``width`` at y=centre."""
    walls = [((distance, -50.0), (distance, centre - width / 2)),
             ((distance, centre + width / 2), (distance, 50.0))]
    return cast(kinect_angles(), walls)


def _through_door(spans):
    """Spans that look through the door (beyond the wall, into the room behind)."""
    return [s for s in spans if s.best_range > 5.0]


def test_door_narrower_than_robot_dropped():
    """A 0.3 m door (robot needs 0.46 m) yields no span through it."""
    spans = find_spans(kinect_scan(door_ranges(0.3)), CFG)
    assert _through_door(spans) == []
    assert spans                    # the wall itself (1.5 m away) is still free space


def test_door_wider_than_robot_kept():
    """A 0.8 m door yields a span through it, pointing at the door."""
    spans = find_spans(kinect_scan(door_ranges(0.8)), CFG)
    door = _through_door(spans)
    assert len(door) == 1
    assert abs(door[0].best_angle) < math.atan2(0.4, 1.5)
    # The safety shrink leaves less than the door's raw angular width.
    assert door[0].width < 2 * math.atan2(0.4, 1.5)


def test_door_just_too_narrow_is_dropped_just_wide_enough_is_kept():
    """The threshold sits at the robot's width plus margins (0.46 m) within a few cm."""
    assert _through_door(find_spans(kinect_scan(door_ranges(0.42)), CFG)) == []
    assert len(_through_door(find_spans(kinect_scan(door_ranges(0.55)), CFG))) == 1


def test_negative_increment_gives_same_geometry():
    """Reversing the beam order (negative increment) finds the same gap at the same angle."""
    ranges = door_ranges(0.8, centre=0.3)
    fwd = _through_door(find_spans(kinect_scan(ranges), CFG))
    rev = _through_door(find_spans(kinect_scan(ranges, flip=True), CFG))
    assert len(fwd) == 1 and len(rev) == 1
    assert rev[0].best_angle == pytest.approx(fwd[0].best_angle, abs=0.005)
    assert rev[0].best_angle == pytest.approx(math.atan2(0.3, 1.5), abs=0.2)
    assert rev[0].width == pytest.approx(fwd[0].width, abs=1e-9)
    assert rev[0].angle_start > rev[0].angle_end       # index order follows the increment


def test_nan_blocks_and_splits():
    """NaN is no information = blocked: a NaN band in an open field splits it in two."""
    ranges = np.full(KINECT_N, np.inf)
    ranges[300:340] = np.nan
    spans = find_spans(kinect_scan(ranges), CFG)
    assert len(spans) == 2
    for span in spans:
        assert not (span.start <= 320 <= span.end)


def test_below_range_min_blocks():
    """A reading below range_min is not trusted as clear (and an obstacle that near leaves no
    way past it in a Kinect's view: the gaps beside it are shrunk away)."""
    ranges = np.full(KINECT_N, np.inf)
    ranges[300:340] = 0.2
    assert find_spans(kinect_scan(ranges), CFG) == []
    ranges[300:340] = np.nan                      # no information: two gaps, as NaN splits
    assert len(find_spans(kinect_scan(ranges), CFG)) == 2


def test_an_edge_beside_a_too_near_beam_is_kept_clear_as_if_the_obstacle_were_at_range_min():
    """A 360 degree laser (range_min 0.25 m) reads -inf over a wall stretch (nearer than it can
    measure), 3 m elsewhere: the open span's edges on both sides of the wall are shrunk for an
    obstacle at range_min, not at the 3 m the edge beams read (found in the scans of a wander
    trapped beside a wall corner in the recovery benchmark: a span ending at a -inf stretch
    was buffered for its own 2.4 m edge beam). A NaN stretch (no information) still costs only
    the edge beam's own buffer."""
    ang = lidar_angles()
    buffer = math.asin(CFG.half_width / 0.25)

    def spans(near):
        ranges = np.where((ang > 0.1) & (ang < 1.0), near, 3.0)
        return find_spans(Scan(ranges, -math.pi, 2 * math.pi / LIDAR_N, 0.25, 10.0), CFG)
    (span,) = spans(-np.inf)
    inc = 2 * math.pi / LIDAR_N
    assert span.angle_start >= 1.0 + buffer - inc
    assert span.angle_end <= 0.1 - buffer + 2 * math.pi + inc
    (unknown,) = spans(np.nan)
    assert unknown.width > span.width + 1.5


def test_a_kinect_gap_beside_a_wall_too_near_to_measure_is_judged_like_one_it_measures():
    """A Kinect reading -inf left of 0.3 rad: that gap is as narrow for the robot as beside a
    wall it measures at 0.46 m (none left); only unknown beams (NaN) leave it open."""
    def spans(near):
        return find_spans(kinect_scan(np.where(kinect_angles() > 0.3, near, 3.0)), CFG)
    assert spans(0.46) == [] and spans(-np.inf) == []
    assert len(spans(np.nan)) == 1


def test_a_range_min_of_zero_does_not_break_the_edge_buffer():
    """range_min 0 (some drivers): a -inf neighbour is "very near"; no exception, no span."""
    ranges = np.where(kinect_angles() > 0.1, -np.inf, 3.0)
    scan = Scan(ranges, -KINECT_FOV, 2 * KINECT_FOV / (KINECT_N - 1), 0.0, 10.0)
    assert find_spans(scan, CFG) == []


def test_all_nan_and_empty_give_no_span():
    """No information anywhere: no span, no exception."""
    assert find_spans(kinect_scan(np.full(KINECT_N, np.nan)), CFG) == []
    assert find_spans(Scan((), -0.5, 0.01, 0.1, 10.0), CFG) == []


def test_bad_scan_metadata_gives_no_span():
    """Zero or NaN increments and NaN limits are refused quietly, never raised."""
    assert find_spans(Scan((1.0, 2.0), 0.0, 0.0, 0.1, 10.0), CFG) == []
    assert find_spans(Scan((1.0, 2.0), 0.0, float('nan'), 0.1, 10.0), CFG) == []
    assert find_spans(Scan((1.0, 2.0), 0.0, 0.1, 0.1, float('nan')), CFG) == []


def test_discontinuity_splits_spans():
    """Two clear regions at very different ranges are two spans, split at the gap edge."""
    ranges = np.full(KINECT_N, 1.5)
    ranges[320:] = 6.0
    spans = find_spans(kinect_scan(ranges), CFG)
    assert len(spans) == 2
    assert {round(s.best_range, 1) for s in spans} == {1.5, 6.0}


def posts_ranges():
    """Kinect ranges through a field of posts 3-5 m away: the range jumps by more than the
    discontinuity every 8 beams (0.75 degrees), nothing nearer than 3 m."""
    ranges = np.full(KINECT_N, 4.8)
    for start in range(0, KINECT_N, 16):
        ranges[start:start + 8] = 3.0 + 0.1 * (start % 5)
    return ranges


def test_a_field_of_far_posts_leaves_no_span_without_a_gap_horizon():
    assert find_spans(kinect_scan(posts_ranges()), CFG) == []


def test_beyond_the_gap_horizon_far_posts_make_no_edge():
    spans = find_spans(kinect_scan(posts_ranges()), ReactiveConfig(gap_horizon=2.5))
    assert len(spans) == 1
    assert spans[0].start == 0 and spans[0].end == KINECT_N - 1
    assert spans[0].best_range == pytest.approx(4.8)


def test_an_edge_nearer_than_the_gap_horizon_still_splits():
    # A jamb at 1.5 m beside a 6 m opening: within the horizon, still an edge.
    ranges = np.full(KINECT_N, 1.5)
    ranges[320:] = 6.0
    assert len(find_spans(kinect_scan(ranges), ReactiveConfig(gap_horizon=2.5))) == 2
    # Both sides beyond it (3 m and 6 m): one span, heading for the far side.
    ranges[:320] = 3.0
    spans = find_spans(kinect_scan(ranges), ReactiveConfig(gap_horizon=2.5))
    assert len(spans) == 1 and spans[0].best_range == pytest.approx(6.0)


def test_a_beam_without_information_is_an_edge_whatever_the_horizon():
    # (A regression guard: such a beam is never clear, with or without a horizon.)
    ranges = np.full(KINECT_N, 4.8)
    ranges[300:340] = np.nan
    assert len(find_spans(kinect_scan(ranges), ReactiveConfig(gap_horizon=2.5))) == 2


@pytest.mark.parametrize('horizon', [-1.0, 0.3, 0.6])
def test_a_gap_horizon_not_above_clear_distance_is_refused(horizon):
    with pytest.raises(ConfigError, match='gap_horizon'):
        ReactiveConfig(gap_horizon=horizon).validate()


def wrap_gap_ranges():
    """360 ranges: walls at 0.5 m except a gap behind, deepest straight behind."""
    ang = lidar_angles()
    ranges = np.full(LIDAR_N, 0.5)
    behind = np.abs(ang) > math.pi - 1.0
    ranges[behind] = 4.0 + (np.abs(ang[behind]) - (math.pi - 1.0))
    return ranges


def test_360_gap_wrapping_index_zero_is_merged():
    """A gap across index 0 / n-1 is one span whose best direction is ~pi."""
    spans = find_spans(lidar_scan(wrap_gap_ranges()), CFG)
    assert len(spans) == 1
    span = spans[0]
    assert span.end >= LIDAR_N > span.start         # wraps past the last index
    assert angle_dist(span.best_angle, math.pi) < 0.03
    assert span.width > 1.0


def test_360_negative_increment_wrap():
    """The same wrapping gap with the beams in reverse order."""
    ranges = wrap_gap_ranges()[::-1]
    inc = -2 * math.pi / LIDAR_N
    scan = Scan(ranges, -math.pi + (LIDAR_N - 1) * -inc, inc, 0.12, 10.0)
    spans = find_spans(scan, CFG)
    assert len(spans) == 1
    assert angle_dist(spans[0].best_angle, math.pi) < 0.03


def test_spans_sorted_widest_first():
    """Best = widest after shrink."""
    ranges = np.full(KINECT_N, np.nan)
    ranges[0:150] = 5.0
    ranges[300:600] = 5.0
    spans = find_spans(kinect_scan(ranges), CFG)
    assert len(spans) == 2
    assert spans[0].width > spans[1].width
    assert spans[0].start == 300


finite_or_odd = st.one_of(
    st.floats(min_value=-1.0, max_value=20.0, allow_nan=False),
    st.just(float('inf')), st.just(float('-inf')), st.just(float('nan')))


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(ranges=st.lists(finite_or_odd, min_size=0, max_size=400),
       angle_min=st.floats(min_value=-math.pi, max_value=math.pi),
       inc=st.floats(min_value=0.002, max_value=0.1),
       negative=st.booleans(),
       full_circle=st.booleans())
def test_property_find_spans_never_raises(ranges, angle_min, inc, negative, full_circle):
    """Random ranges with inf/NaN: no exception; best_angle inside the scan's angular range."""
    if full_circle and ranges:
        inc = 2 * math.pi / len(ranges)
    if negative:
        inc = -inc
    scan = Scan(np.array(ranges, dtype=float), angle_min, inc, 0.1, 10.0)
    spans = find_spans(scan, CFG)
    if not ranges:
        assert spans == []
        return
    last = angle_min + inc * (len(ranges) - 1)
    lo, hi = min(angle_min, last), max(angle_min, last)
    for span in spans:
        assert lo - 1e-9 <= span.best_angle <= hi + 1e-9
        assert span.width > 0
        assert 0.6 < span.best_range <= 10.0
        assert span.start <= span.end
    assert [s.width for s in spans] == sorted((s.width for s in spans), reverse=True)
    # The state machine never raises either and always returns finite numbers.
    v, w = ReactiveWander(CFG).step(scan, 1.0)
    assert math.isfinite(v) and math.isfinite(w)


# --- config --------------------------------------------------------------------------------

def test_default_config_valid():
    """The TurtleBot2 defaults pass validation."""
    CFG.validate()


def test_bad_config_names_every_key():
    """Each bad key and its value is named in one ConfigError."""
    bad = ReactiveConfig(clear_distance=-1.0, oscillation_flips=0, max_speed=float('nan'))
    with pytest.raises(ConfigError) as err:
        bad.validate()
    text = str(err.value)
    for key in ('clear_distance=-1.0', 'oscillation_flips=0', 'max_speed=nan'):
        assert key in text


def test_contradictory_config_rejected():
    """slow_distance below stop_distance is a contradiction."""
    with pytest.raises(ConfigError, match='slow_distance'):
        ReactiveConfig(slow_distance=0.3, stop_distance=0.5).validate()
    with pytest.raises(ConfigError):
        ReactiveWander(ReactiveConfig(too_close=0.6))


# --- the state machine -----------------------------------------------------------------------

class KinectWorld:
    """A Kinect robot turning/driving among world segments (closed loop on its own commands)."""

    def __init__(self, segments, pose=(0.0, 0.0, 0.0)):
        self.segments = segments
        self.x, self.y, self.th = pose

    def scan(self):
        return kinect_scan(cast(kinect_angles(), self.segments, (self.x, self.y, self.th)))

    def apply(self, v, w, dt):
        self.th += w * dt
        self.x += v * dt * math.cos(self.th)
        self.y += v * dt * math.sin(self.th)


def test_first_step_leaves_stopped_and_open_field_goes_forward():
    """STOPPED -> FIND_NEW_DIR on the first step; open field -> FORWARD at full speed."""
    wander = ReactiveWander(CFG)
    assert wander.state is ReactiveState.STOPPED
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    assert wander.state in (ReactiveState.FIND_NEW_DIR, ReactiveState.TURNING)
    v, w = wander.step(open_scan, 0.1)
    assert wander.state is ReactiveState.FORWARD
    assert v == pytest.approx(CFG.max_speed)
    assert abs(w) <= CFG.max_steer


def test_wall_ahead_find_turn_forward_toward_gap():
    """FORWARD -> (wall ahead) FIND_NEW_DIR -> TURNING -> FORWARD, facing the gap on the left."""
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    wander.step(open_scan, 0.1)
    assert wander.state is ReactiveState.FORWARD
    # A wall 0.48 m ahead, ending at y=0.3: free space only beyond its left end.
    world = KinectWorld([((0.48, -20.0), (0.48, 0.3))])
    seen = []
    t, dt = 0.2, 0.1
    for _ in range(200):
        v, w = wander.step(world.scan(), t)
        if not seen or seen[-1] is not wander.state:
            seen.append(wander.state)
        if wander.state is ReactiveState.FORWARD:
            break
        assert v <= 0.0 + 1e-12                  # never drives forward into the wall
        world.apply(v, w, dt)
        t += dt
    assert seen[:3] == [ReactiveState.FIND_NEW_DIR, ReactiveState.TURNING,
                        ReactiveState.FORWARD]
    assert wander.state is ReactiveState.FORWARD
    # Now facing past the wall's end (world angle atan2(0.3, 0.48) ~ 0.56 rad).
    assert world.th > 0.6
    assert v > 0.0


def test_a_gap_ahead_behind_a_near_corner_is_turned_away_from_not_stared_at():
    """A box corner 0.47 m ahead-right and open space ahead-left: the best gap is within the
    heading tolerance, but FORWARD would stop for the corner at once. The wander must keep
    turning until it can drive, not stand still (seen in the recovery benchmark: a robot in a
    room's corner stood still until its search budget ran out)."""
    # A box ahead-right: front face 0.47 m ahead from y=-2 to y=-0.08, side face along y=-0.08.
    box = [((0.47, -2.0), (0.47, -0.08)), ((0.47, -0.08), (2.0, -0.08))]
    world = KinectWorld(box)
    wander = ReactiveWander(CFG)
    t, dt = 0.0, 0.1
    start = (world.x, world.y, world.th)
    for _ in range(100):
        v, w = wander.step(world.scan(), t)
        world.apply(v, w, dt)
        t += dt
        if v > 0.0:
            break
    assert v > 0.0, 'the wander never drove off (state %s)' % wander.state.name
    assert (world.x, world.y, world.th) != start
    # It drives off to the left, away from the box.
    assert world.th > 0.0


def test_slows_down_near_obstacles():
    """FORWARD speed drops as the front range approaches stop_distance."""
    wander = ReactiveWander(CFG)
    far = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(far, 0.0)
    v_far, _ = wander.step(far, 0.1)
    near = kinect_scan(np.full(KINECT_N, 0.7))
    v_near, _ = wander.step(near, 0.2)
    assert wander.state is ReactiveState.FORWARD
    assert 0.0 < v_near < v_far


def test_too_close_backs_up():
    """An obstacle nearer than too_close -> BACK_UP with v < 0, then FIND_NEW_DIR after
    backup_time."""
    wander = ReactiveWander(CFG)
    ranges = np.full(LIDAR_N, np.inf)
    ang = lidar_angles()
    ranges[np.abs(ang - 0.3) < 0.1] = 0.2          # something close, ahead-left
    scan = lidar_scan(ranges)
    v, w = wander.step(scan, 10.0)
    assert wander.state is ReactiveState.BACK_UP
    assert v == pytest.approx(-CFG.backup_speed) and w == 0.0
    t = 10.0
    states = []
    while t < 10.0 + CFG.backup_time + 0.5:
        t += 0.1
        v, w = wander.step(lidar_scan(np.full(LIDAR_N, np.inf)), t)
        states.append(wander.state)
    assert ReactiveState.FIND_NEW_DIR in states or ReactiveState.TURNING in states
    assert states[0] is ReactiveState.BACK_UP
    # It backed up for backup_time, not longer.
    backing = states.index(ReactiveState.FIND_NEW_DIR) * 0.1
    assert backing == pytest.approx(CFG.backup_time, abs=0.15)


def test_readings_below_range_min_still_back_up():
    """A scan whose only returns are below range_min means pressed against something."""
    wander = ReactiveWander(CFG)
    ranges = np.full(LIDAR_N, np.nan)
    ranges[np.abs(lidar_angles()) < 0.2] = 0.05        # below range_min 0.12
    v, _ = wander.step(lidar_scan(ranges), 0.0)
    assert wander.state is ReactiveState.BACK_UP and v < 0.0


def test_back_up_stops_early_when_blocked_behind_and_turns_away():
    """Watching behind: something behind ends BACK_UP at once; then turn away from the side
    where the obstacle was."""
    wander = ReactiveWander(CFG)
    ang = lidar_angles()
    front = np.full(LIDAR_N, np.inf)
    front[np.abs(ang - 0.3) < 0.1] = 0.2             # obstacle on the left
    wander.step(lidar_scan(front), 0.0)
    assert wander.state is ReactiveState.BACK_UP
    both = front.copy()
    both[np.abs(ang) > 3.0] = 0.2                     # now something right behind too
    v, w = wander.step(lidar_scan(both), 0.1)
    assert wander.state is ReactiveState.FIND_NEW_DIR
    assert v == 0.0
    v, w = wander.step(lidar_scan(both), 0.2)
    assert wander.state is not ReactiveState.BACK_UP   # boxed in: turn, don't reverse
    assert v == 0.0 and w < 0.0                         # away from the obstacle on the left


def _side_gap(left):
    """Kinect scan with nothing known except a gap on one side (NaN elsewhere)."""
    ang = kinect_angles()
    ranges = np.full(KINECT_N, np.nan)
    sel = (ang > 0.15) if left else (ang < -0.15)
    ranges[sel] = np.inf
    return kinect_scan(ranges)


def test_oscillation_backs_up():
    """The best gap flipping left/right every scan -> BACK_UP after oscillation_flips flips."""
    wander = ReactiveWander(CFG)
    t = 0.0
    ws = []
    for k in range(12):
        v, w = wander.step(_side_gap(k % 2 == 0), t)
        ws.append(w)
        if wander.state is ReactiveState.BACK_UP:
            break
        t += 0.1
    assert wander.state is ReactiveState.BACK_UP
    assert v < 0.0
    # The commands before the last show oscillation_flips flips; the last scan's flip (one more
    # than allowed) was replaced by the reverse command.
    signs = [math.copysign(1, w) for w in ws[:-1] if w != 0.0]
    flips = sum(1 for a, b in zip(signs, signs[1:]) if a != b)
    assert flips == CFG.oscillation_flips
    assert len(ws) == CFG.oscillation_flips + 2


def test_driving_forward_without_moving_is_a_stall_backs_up_and_turns_left_blind():
    """FORWARD into something the laser does not show (the odometry stays put): after
    stall_time it backs up, then turns left by stall_turn without driving, then drives again.
    Progress, or no odometry at all, is no stall."""
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander = ReactiveWander(CFG)
    dt = 0.1
    odom = (1.0, 2.0)
    commands = []
    for k in range(200):
        v, w = wander.step(open_scan, k * dt, odom)
        commands.append((k * dt, wander.state, v, w))
    forward_from = next(t for t, state, v, _ in commands if state is ReactiveState.FORWARD)
    first = next(i for i, c in enumerate(commands) if c[1] is ReactiveState.BACK_UP)
    last = next(i for i in range(first, len(commands))
                if commands[i][1] is not ReactiveState.BACK_UP) - 1
    backup = commands[first:last + 1]
    assert all(v < 0.0 for _, _, v, _ in backup)
    assert backup[0][0] - forward_from >= CFG.stall_time - 1e-9
    # After the back-up: a left turn in place for stall_turn / turn_speed s, then forward.
    after = commands[last + 1:]
    blind = [c for c in after if c[0] < after[0][0] + CFG.stall_turn / CFG.turn_speed - dt]
    assert blind and all(v == 0.0 and w == pytest.approx(CFG.turn_speed)
                         for _, _, v, w in blind[1:])
    assert any(state is ReactiveState.FORWARD and v > 0.0 for _, state, v, _ in after)
    # Moving more than stall_distance now and then, or no odometry, never stalls.
    for odometry in ((lambda k: (0.02 * k, 0.0)), (lambda k: None)):
        other = ReactiveWander(CFG)
        for k in range(int(3 * CFG.stall_time / dt)):
            other.step(open_scan, k * dt, odometry(k))
            assert other.state is not ReactiveState.BACK_UP


def test_a_pause_between_steps_is_not_a_stall():
    """The recovery node stops stepping the wander while scans are stale; the robot stood
    still because it was told to, so that time does not count as driving without progress."""
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander = ReactiveWander(CFG)
    odom = (0.0, 0.0)
    for k in range(5):
        wander.step(open_scan, 0.1 * k, odom)
    assert wander.state is ReactiveState.FORWARD
    # A 10 s pause, then less than stall_time of driving without progress: no stall yet.
    t = 10.4
    while t < 10.4 + CFG.stall_time - 0.5:
        wander.step(open_scan, t, odom)
        assert wander.state is ReactiveState.FORWARD
        t += 0.1
    # Driving on without progress does stall.
    for _ in range(10):
        wander.step(open_scan, t, odom)
        t += 0.1
    assert wander.state is ReactiveState.BACK_UP


def test_slow_direction_changes_are_not_oscillation():
    """The same flips spread wider than oscillation_window never trigger BACK_UP."""
    wander = ReactiveWander(CFG)
    spacing = CFG.oscillation_window / CFG.oscillation_flips + 0.5
    for k in range(20):
        wander.step(_side_gap(k % 2 == 0), k * spacing)
        assert wander.state is not ReactiveState.BACK_UP


def test_clock_backwards_resets_backup_timer():
    """A clock jump backwards restarts the BACK_UP timer instead of backing up for ages."""
    wander = ReactiveWander(CFG)
    ang = lidar_angles()
    close = np.full(LIDAR_N, np.inf)
    close[np.abs(ang) < 0.1] = 0.2
    clear = lidar_scan(np.full(LIDAR_N, np.inf))
    wander.step(lidar_scan(close), 100.0)
    assert wander.state is ReactiveState.BACK_UP
    wander.step(clear, 100.5)
    assert wander.state is ReactiveState.BACK_UP
    wander.step(clear, 50.0)                         # e.g. sim time restarted
    assert wander.state is ReactiveState.BACK_UP
    wander.step(clear, 50.0 + CFG.backup_time + 0.1)
    assert wander.state is not ReactiveState.BACK_UP


def test_clock_backwards_resets_oscillation_history():
    """Flips recorded before a backwards jump are forgotten."""
    wander = ReactiveWander(CFG)
    for k in range(CFG.oscillation_flips):           # flips just below the limit
        wander.step(_side_gap(k % 2 == 0), 10.0 + 0.1 * k)
    wander.step(_side_gap(True), 1.0)                # backwards
    for k in range(3):
        wander.step(_side_gap(k % 2 == 1), 1.1 + 0.1 * k)
        assert wander.state is not ReactiveState.BACK_UP


def test_all_nan_scan_stops_with_throttled_warning(caplog):
    """All-NaN scans -> STOPPED, (0, 0), one warning per warn_period; recovers on a good scan."""
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    wander.step(open_scan, 0.1)
    assert wander.state is ReactiveState.FORWARD
    nan_scan = kinect_scan(np.full(KINECT_N, np.nan))
    with caplog.at_level(logging.WARNING, logger='rosout'):
        for k in range(20):
            assert wander.step(nan_scan, 0.2 + 0.1 * k) == (0.0, 0.0)
            assert wander.state is ReactiveState.STOPPED
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    wander.step(open_scan, 3.0)
    assert wander.state is not ReactiveState.STOPPED


def test_a_laser_that_reads_only_too_close_turns_in_place_until_it_sees_again():
    """A Kinect facing a wall nearer than its minimum range reads -inf everywhere (REP 117):
    that is no reason to stop for ever (seen in the recovery benchmark: a robot in a room's
    corner stood still until its search budget ran out); it turns in place, never forward."""
    # A wall 0.3 m ahead across the whole view, open to the left beyond 90 degrees.
    world = KinectWorld([((0.3, -5.0), (0.3, 5.0)), ((0.3, -5.0), (-5.0, -5.0))])

    def scan():
        ranges = cast(kinect_angles(), world.segments, (world.x, world.y, world.th))
        return kinect_scan(np.where(ranges < 0.45, -np.inf, ranges))     # as a Kinect reads
    wander = ReactiveWander(CFG)
    assert np.all(np.isneginf(scan().ranges))
    t, dt = 0.0, 0.1
    for _ in range(100):
        v, w = wander.step(scan(), t)
        assert wander.state is not ReactiveState.STOPPED
        world.apply(v, w, dt)
        t += dt
        if v > 0.0:
            break
    assert v > 0.0 and abs(world.th) > 1.0


def test_a_post_too_near_to_measure_stops_forward_though_the_rest_is_open():
    """A chair leg 0.3 m ahead, slightly left, in open space: the Kinect reads -inf on the
    beams that hit it and no return on all the others. That is an obstacle in the path, not a
    missing reading (seen in the recovery benchmark: the wander drove into a single occupied
    cell of the Intel map). FORWARD stops, does not drive on while the post is ahead, and the
    approach's clearance ahead is 0."""
    ranges = cast(kinect_angles(), [((0.3, 0.03), (0.3, 0.08))])
    scan = kinect_scan(np.where(ranges < 0.45, -np.inf, ranges))        # as a Kinect reads
    assert np.isneginf(scan.ranges).sum() >= 3 and np.isposinf(scan.ranges).sum() > 500
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    wander.step(open_scan, 0.1)
    assert wander.state is ReactiveState.FORWARD
    v, _ = wander.step(scan, 0.2)
    assert v == 0.0 and wander.state is ReactiveState.FIND_NEW_DIR
    for k in range(3, 30):
        v, _ = wander.step(scan, 0.1 * k)
        assert v <= 0.0, 'drove at the post (state %s)' % wander.state.name
    assert wander.clearance_ahead(scan) == 0.0
    assert wander.clearance_ahead(open_scan) == pytest.approx(10.0)


def test_empty_and_garbage_scans_stop():
    """Empty ranges, a zero increment or non-numeric ranges stop the robot, never raise."""
    wander = ReactiveWander(CFG)
    assert wander.step(Scan((), -0.5, 0.01, 0.1, 10.0), 0.0) == (0.0, 0.0)
    assert wander.state is ReactiveState.STOPPED
    assert wander.step(Scan((1.0, 2.0), 0.0, 0.0, 0.1, 10.0), 0.1) == (0.0, 0.0)
    assert wander.step(Scan(('a', None), 0.0, 0.1, 0.1, 10.0), 0.2) == (0.0, 0.0)
    assert wander.step(kinect_scan(np.full(KINECT_N, np.inf)), float('nan')) == (0.0, 0.0)


def test_no_gap_turns_in_place_without_dithering():
    """No span anywhere: rotate in place in one remembered direction."""
    wander = ReactiveWander(CFG)
    blocked = kinect_scan(np.full(KINECT_N, 0.55))
    ws = []
    for k in range(10):
        v, w = wander.step(blocked, 0.1 * k)
        ws.append(w)
        assert v == 0.0
        assert wander.state is ReactiveState.FIND_NEW_DIR
    assert all(w == pytest.approx(CFG.turn_speed) for w in ws)


def scattered_returns(near=3.0, far=4.5, every=6):
    """A Kinect scan among scattered returns: every few beams the range jumps between ``near``
    and ``far`` (more than ``discontinuity``), so no gap is wide enough, though the way ahead
    is clear for ``near`` metres."""
    ranges = np.where((np.arange(KINECT_N) // every) % 2 == 0, near, far)
    return kinect_scan(ranges)


def test_scattered_returns_leave_no_gap_and_open_after_turn_drives_after_a_full_turn(caplog):
    caplog.set_level(logging.INFO)
    scan = scattered_returns()
    assert find_spans(scan, CFG) == []
    full_turn = 2.0 * math.pi / CFG.turn_speed
    off = ReactiveWander(ReactiveConfig(open_after_turn=0.0))
    on = ReactiveWander(CFG)                       # on by default: 1 m
    t, seen_forward = 0.0, None
    while t < 2.0 * full_turn:
        assert off.step(scan, t) == (0.0, pytest.approx(CFG.turn_speed))
        v, w = on.step(scan, t)
        if v > 0.0 and seen_forward is None:
            seen_forward = t
        t = round(t + 0.1, 6)
    # Off: it turns on for ever. On: a full turn first, then ahead at full speed.
    assert off.state is ReactiveState.FIND_NEW_DIR
    assert seen_forward == pytest.approx(full_turn, abs=0.15)
    assert on.state is ReactiveState.FORWARD
    assert 'no gap in a full turn' in caplog.text


def test_open_after_turn_waits_for_a_front_that_is_clear_far_enough():
    wander = ReactiveWander(ReactiveConfig(open_after_turn=3.5))
    scan = scattered_returns()                     # the front reads 3.0 m: not clear enough
    for k in range(400):
        v, _w = wander.step(scan, 0.1 * k)
        assert v == 0.0
    # The count restarts after a gap was picked (TURNING) or the robot drove.
    wander = ReactiveWander(ReactiveConfig(open_after_turn=1.0))
    wander.step(scattered_returns(), 0.0)
    wander.step(kinect_scan(np.full(KINECT_N, 5.0)), 5.0)   # a gap: TURNING/FORWARD
    t = 5.1
    while wander.step(scattered_returns(), t)[0] == 0.0:
        t = round(t + 0.1, 6)
    assert t >= 5.1 + 2.0 * math.pi / CFG.turn_speed - 0.15


@pytest.mark.parametrize('value', [-1.0, 0.3, float('nan')])
def test_bad_open_after_turn_is_refused(value):
    with pytest.raises(ConfigError, match='open_after_turn'):
        ReactiveConfig(open_after_turn=value).validate()


def test_reset_returns_to_stopped():
    """reset() forgets the state."""
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    wander.step(open_scan, 0.1)
    assert wander.state is ReactiveState.FORWARD
    wander.reset()
    assert wander.state is ReactiveState.STOPPED
    assert wander.best_span is None


# --- remembered returns (what the laser cannot see now) ----------------------------------------

def test_a_remembered_point_ahead_stops_forward_though_the_scan_is_clear():
    """A Kinect cannot see the wall 0.3 m ahead; the memory can: FORWARD stops, and the gap
    straight ahead is no way out while the point is there."""
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    wander.step(open_scan, 0.1)
    assert wander.state is ReactiveState.FORWARD
    wall = np.array([[0.3, y] for y in np.linspace(-0.5, 0.5, 21)])
    v, w = wander.step(open_scan, 0.2, remembered=wall)
    assert wander.state is ReactiveState.FIND_NEW_DIR and v == 0.0
    for k in range(3, 30):
        v, w = wander.step(open_scan, 0.1 * k, remembered=wall)
        assert v <= 0.0, 'drove at a remembered wall (state %s)' % wander.state.name
    assert w != 0.0, 'it turns to find another way'


def test_a_remembered_point_beside_the_path_does_not_stop_forward():
    """A wall alongside, clear of the footprint's path: drive on."""
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    beside = np.array([[x, 0.4] for x in np.linspace(-0.5, 1.5, 21)])
    wander.step(open_scan, 0.0, remembered=beside)
    v, _ = wander.step(open_scan, 0.1, remembered=beside)
    assert wander.state is ReactiveState.FORWARD and v == pytest.approx(CFG.max_speed)


def test_a_remembered_point_slows_forward_like_a_reading():
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    wander.step(open_scan, 0.0)
    wander.step(open_scan, 0.1)
    v, _ = wander.step(open_scan, 0.2, remembered=[[0.7, 0.0]])
    assert wander.state is ReactiveState.FORWARD
    assert 0.0 < v < CFG.max_speed


def test_a_remembered_point_behind_ends_back_up():
    """The Kinect never sees behind; a wall remembered there ends the back-up at once."""
    wander = ReactiveWander(CFG)
    ang = lidar_angles()
    front = np.full(LIDAR_N, np.inf)
    front[np.abs(ang - 0.3) < 0.1] = 0.2
    wander.step(lidar_scan(front), 0.0)
    assert wander.state is ReactiveState.BACK_UP
    v, _ = wander.step(lidar_scan(front), 0.1, remembered=[[-0.3, 0.0]])
    assert wander.state is ReactiveState.FIND_NEW_DIR and v == 0.0
    far_behind = [[-(CFG.robot_radius + CFG.too_close) - 0.05, 0.0]]
    wander = ReactiveWander(CFG)
    wander.step(lidar_scan(front), 0.0)
    v, _ = wander.step(lidar_scan(front), 0.1, remembered=far_behind)
    assert wander.state is ReactiveState.BACK_UP and v < 0.0


def test_a_gap_whose_way_a_remembered_point_blocks_is_passed_over_for_a_free_one():
    """A 360 degree laser sees a long gap ahead-right and a shorter one ahead-left, both out
    of the front cone; a table corner it saw before (remembered, 0.4 m off to the right) lies in
    the path toward the right one. Turning to it would stop FORWARD at once; the wander turns
    left instead (seen in the recovery benchmark: beside a wall corner the wander turned to
    such a gap, past it, and back, until the oscillation check backed it up, over and over)."""
    ang = lidar_angles()
    ranges = np.full(LIDAR_N, 0.5)
    ranges[np.abs(ang) < 0.4] = 1.0
    ranges[(ang >= -2.0) & (ang <= -0.4)] = 3.0
    ranges[(ang >= 0.4) & (ang <= 2.0)] = 2.0
    scan = lidar_scan(ranges)
    best = find_spans(scan, CFG)[0]
    assert best.best_range == 3.0 and normalize_angle(best.best_angle) < -CFG.front_half_angle
    corner = [[0.2, -0.35]]
    wander = ReactiveWander(CFG)
    _, w = wander.step(scan, 0.0, remembered=corner)
    assert w > 0.0, 'turned toward the blocked gap'
    assert wander.state is ReactiveState.TURNING
    wander = ReactiveWander(CFG)                       # without the corner: the best gap
    _, w = wander.step(scan, 0.0)
    assert w < 0.0


def test_no_gap_to_turn_to_while_every_way_is_blocked_turns_on_one_way():
    """Every gap's way blocked by remembered points (a ring 0.4 m round): no turn toward any,
    no turning back and forth, no back-up: it turns on in one direction."""
    ring = [[0.4 * math.cos(a), 0.4 * math.sin(a)] for a in np.linspace(-math.pi, math.pi, 72)]
    wander = ReactiveWander(CFG)
    scan = lidar_scan(np.full(LIDAR_N, 3.0) + 0.5 * np.sin(3 * lidar_angles()))
    ws = [wander.step(scan, 0.1 * k, remembered=ring)[1] for k in range(30)]
    assert wander.state is ReactiveState.FIND_NEW_DIR
    assert all(w == pytest.approx(CFG.turn_speed) for w in ws)


def test_non_finite_remembered_points_are_ignored():
    wander = ReactiveWander(CFG)
    open_scan = kinect_scan(np.full(KINECT_N, np.inf))
    junk = [[math.nan, 0.0], [0.3, math.inf]]
    wander.step(open_scan, 0.0, remembered=junk)
    v, _ = wander.step(open_scan, 0.1, remembered=junk)
    assert wander.state is ReactiveState.FORWARD and v == pytest.approx(CFG.max_speed)
