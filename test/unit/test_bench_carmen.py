"""bench/carmen.py: Carmen log parsing, odometry rebuilding, alignment, bag writing.

Tiny synthetic logs written to tmp_path; no shared data, no ROS master.
"""
import gzip
import math

import pytest

from lost_and_found.bench import carmen

INTEL_COMMENT = """# Intel Research Lab, Seattle (GMapping map).
# With origin [0,0,0], log frame -> map frame is:
#   x_map = cos(12.6deg)*x_log - sin(12.6deg)*y_log + 15.95
#   y_map = sin(12.6deg)*x_log + cos(12.6deg)*y_log + 28.35 ;  yaw_map = yaw_log + 12.6deg
image: intel.pgm
resolution: 0.05
origin: [0.0, 0.0, 0.0]
"""


def odom_line(t, pose):
    return 'ODOM %r %r %r 0 0 0 %r pippo %r' % (pose[0], pose[1], pose[2], t, t)


def flaser_line(t, pose, ranges):
    values = ' '.join('%r' % r for r in ranges)
    p = '%r %r %r' % tuple(pose)
    return 'FLASER %d %s %s %s %r pippo %r' % (len(ranges), values, p, p, t, t)


def corrected_log(raw, corrected, scan_steps, ranges=(1.0, 2.0, 3.0)):
    """Lines of a Carmen 'corrected' log, made as the correction tool makes them.

    ``raw``: the robot's wheel odometry [(t, pose)], ``corrected``: its true pose at the scans
    {step index: pose}, ``scan_steps``: the indices of ``raw`` at which a scan is taken.
    After each scan the ODOM stream restarts at the corrected pose (a reset line with a
    garbage stamp) and continues by the raw increments.
    """
    lines = ['# message formats defined: PARAM ODOM FLASER', 'PARAM robot_frontlaser_offset 0.0 '
             'nohost 0']
    anchor_raw, anchor_log = None, None
    for i, (t, pose) in enumerate(raw):
        logged = pose if anchor_raw is None else \
            carmen.compose(anchor_log, carmen.relative(anchor_raw, pose))
        lines.append(odom_line(t, logged))
        if i in scan_steps:
            truth = corrected[i]
            lines.append(flaser_line(t, truth, ranges))
            lines.append(odom_line(1.08499e-42, truth))     # the reset
            lines.append('NEFF 15')
            anchor_raw, anchor_log = pose, truth
    return lines


def write(path, lines, gz=False):
    opener = gzip.open if gz else open
    with opener(path, 'wt') as stream:
        stream.write('\n'.join(lines) + '\n')
    return str(path)


def raw_track():
    """A robot driving a curve: 12 raw odometry poses, one every 0.5 s."""
    poses, pose = [], (0.0, 0.0, 0.0)
    for i in range(12):
        poses.append((1.0 + 0.5 * i, pose))
        pose = carmen.compose(pose, (0.3, 0.0, 0.15))
    return poses


def test_compose_invert_relative_round_trip():
    a, b = (1.0, 2.0, 0.5), (-0.5, 0.3, 2.9)
    back = carmen.compose(a, carmen.relative(a, b))
    assert back == pytest.approx(b)
    assert carmen.compose(a, carmen.invert(a)) == pytest.approx((0.0, 0.0, 0.0), abs=1e-12)
    # The yaw wraps into [-pi, pi).
    assert -math.pi <= carmen.compose((0, 0, 3.0), (0, 0, 1.0))[2] < math.pi


def test_interpolate_midpoint_and_yaw_across_pi():
    track = [(0.0, 0.0, 0.0, 3.0), (2.0, 2.0, -4.0, -3.0)]
    x, y, yaw = carmen.interpolate(track, 1.0)
    assert (x, y) == pytest.approx((1.0, -2.0))
    # Shorter arc through pi, not through 0.
    assert abs(abs(yaw) - math.pi) < 0.01
    assert carmen.interpolate(track, -5.0) == pytest.approx((0.0, 0.0, 3.0))
    assert carmen.interpolate(track, 9.0) == pytest.approx((2.0, -4.0, -3.0))
    with pytest.raises(ValueError):
        carmen.interpolate([], 0.0)


def test_jump_offset_moves_the_base_by_the_jump():
    pose = (3.0, -1.0, 2.0)
    jump = (2.0, -1.5, 0.7)
    offset = carmen.jump_offset(pose, jump)
    jumped = carmen.compose(offset, pose)
    assert jumped == pytest.approx((5.0, -2.5, 2.7))
    # A later pose moves rigidly with it: the relative motion is unchanged.
    later = carmen.compose(pose, (1.0, 0.2, 0.3))
    assert carmen.relative(jumped, carmen.compose(offset, later)) == \
        pytest.approx((1.0, 0.2, 0.3))


def test_read_log_plain_and_gzip_with_resets(tmp_path):
    raw = raw_track()
    corrected = {3: (0.8, 0.1, 0.5), 8: (2.0, 1.2, 1.3)}
    lines = corrected_log(raw, corrected, {3, 8})
    for gz in (False, True):
        path = write(tmp_path / ('log.gz' if gz else 'log'), lines, gz)
        log = carmen.read_log(path)
        assert len(log.scans) == 2
        assert len(log.odometry) == 12 + 2
        assert [log.odometry[i].t for i in log.resets] == [1.08499e-42] * 2
        assert log.scans[0].ranges == (1.0, 2.0, 3.0)
        assert (log.scans[1].x, log.scans[1].y, log.scans[1].theta) == (2.0, 1.2, 1.3)
        assert carmen.laser_offset(log) == 0.0


def test_raw_odometry_undoes_the_resets(tmp_path):
    raw = raw_track()
    corrected = {3: (0.8, 0.1, 0.5), 8: (2.0, 1.2, 1.3)}
    log = carmen.read_log(write(tmp_path / 'log', corrected_log(raw, corrected, {3, 8})))
    track = carmen.raw_odometry(log)
    assert len(track) == len(raw)
    for (t, pose), rebuilt in zip(raw, track):
        assert rebuilt[0] == t
        assert rebuilt[1:4] == pytest.approx(pose, abs=1e-9)
    # Each scan gets the odometry of its own line (stamped like it).
    poses = carmen.scan_odometry(log, track)
    assert poses[0] == pytest.approx(raw[3][1])
    assert poses[1] == pytest.approx(raw[8][1])


def test_scan_odometry_interpolates_without_a_matching_stamp(tmp_path):
    lines = [odom_line(1.0, (0.0, 0.0, 0.0)), odom_line(3.0, (2.0, 0.0, 0.0)),
             flaser_line(2.5, (9.0, 9.0, 0.0), (1.0,)), odom_line(4.0, (3.0, 0.0, 0.0))]
    log = carmen.read_log(write(tmp_path / 'log', lines))
    assert log.resets == []
    assert carmen.scan_odometry(log, carmen.raw_odometry(log))[0] == \
        pytest.approx((1.5, 0.0, 0.0))


def test_stable_sorted_keeps_file_order_of_equal_times():
    records = [carmen.OdomRecord(2.0, 0, 0, 0, 0, 0, 1), carmen.OdomRecord(1.0, 0, 0, 0, 0, 0, 2),
               carmen.OdomRecord(2.0, 0, 0, 0, 0, 0, 3)]
    assert [r.line for r in carmen.stable_sorted(records)] == [2, 1, 3]


@pytest.mark.parametrize('line, words', [
    ('ODOM 1 2', 'ODOM needs'),
    ('ODOM 1 2 x 0 0 0 5 h 5', 'not a number'),
    ('ODOM 1 2 nan 0 0 0 5 h 5', 'non-finite'),
    ('FLASER 3 1 2', 'FLASER with 3 beams'),
    ('FLASER x 1', 'beam count'),
])
def test_bad_lines_are_named(tmp_path, line, words):
    path = write(tmp_path / 'bad.log', [odom_line(1.0, (0, 0, 0)), line])
    with pytest.raises(carmen.CarmenError) as error:
        carmen.read_log(path)
    assert ':2:' in str(error.value) and words in str(error.value)


def test_missing_file_and_empty_log(tmp_path):
    with pytest.raises(carmen.CarmenError, match='cannot read'):
        carmen.read_log(str(tmp_path / 'nope.log'))
    with pytest.raises(carmen.CarmenError, match='needs FLASER and ODOM'):
        carmen.read_log(write(tmp_path / 'empty.log', ['# nothing', 'NEFF 3']))


def test_laser_offset_from_param(tmp_path):
    lines = ['PARAM robot_frontlaser_offset 0.12 nohost 0', odom_line(1.0, (0, 0, 0)),
             flaser_line(1.0, (0, 0, 0), (1.0,))]
    assert carmen.laser_offset(carmen.read_log(write(tmp_path / 'a', lines))) == 0.12
    lines[0] = 'PARAM robot_frontlaser_offset abc nohost 0'
    with pytest.raises(carmen.CarmenError, match='robot_frontlaser_offset'):
        carmen.laser_offset(carmen.read_log(write(tmp_path / 'b', lines)))


def test_parse_alignment_of_the_map_comments():
    alignment = carmen.parse_alignment(INTEL_COMMENT, 'intel.yaml')
    assert alignment.x == 15.95 and alignment.y == 28.35
    assert alignment.yaw == pytest.approx(math.radians(12.6))
    x, y, yaw = carmen.to_map(alignment, (1.0, 0.0, 0.0))
    assert x == pytest.approx(math.cos(math.radians(12.6)) + 15.95)
    assert y == pytest.approx(math.sin(math.radians(12.6)) + 28.35)
    assert yaw == pytest.approx(math.radians(12.6))


def test_parse_alignment_negative_translation_and_errors(tmp_path):
    text = INTEL_COMMENT.replace('+ 15.95', '- 1.5').replace('+ 28.35', '- 2')
    alignment = carmen.parse_alignment(text)
    assert (alignment.x, alignment.y) == (-1.5, -2.0)
    with pytest.raises(carmen.CarmenError, match='missing the yaw_map rule'):
        carmen.parse_alignment(INTEL_COMMENT.replace('yaw_map', 'heading'), 'm.yaml')
    with pytest.raises(carmen.CarmenError, match='disagree'):
        carmen.parse_alignment(INTEL_COMMENT.replace('yaw_log + 12.6deg', 'yaw_log + 12deg'))
    # Rules outside comments do not count.
    with pytest.raises(carmen.CarmenError, match='no log frame'):
        carmen.parse_alignment(INTEL_COMMENT.replace('#', ''))
    path = tmp_path / 'map.yaml'
    path.write_text(INTEL_COMMENT)
    assert carmen.read_alignment(str(path)) == alignment._replace(x=15.95, y=28.35)
    with pytest.raises(carmen.CarmenError, match='cannot read'):
        carmen.read_alignment(str(tmp_path / 'none.yaml'))


def small_log(tmp_path):
    raw = raw_track()
    corrected = {3: (0.8, 0.1, 0.5), 8: (2.0, 1.2, 1.3)}
    lines = corrected_log(raw, corrected, {3, 8}, ranges=(1.0, 5.0, 2.0))
    # A repeated stamp with a different pose: one pose per stamp must remain.
    lines.insert(3, odom_line(raw[1][0], (0.31, 0.0, 0.0)))
    return carmen.read_log(write(tmp_path / 'log', lines)), raw


def test_replay_data_unique_stamps_pinned_scans_and_truth(tmp_path):
    log, raw = small_log(tmp_path)
    alignment = carmen.Alignment(10.0, 20.0, math.pi / 2)
    data = carmen.replay_data(log, alignment, 5.0)
    stamps = [p[0] for p in data.odometry]
    assert stamps == sorted(set(stamps))
    assert data.origin == 1.0
    odometry = {p[0]: p[1:] for p in data.odometry}
    for t, _ranges, pose in data.scans:
        assert odometry[t] == pytest.approx(pose)
    # Ground truth in the map frame: (0.8, 0.1) rotated by 90 deg, then shifted.
    assert data.truth[0][1:3] == pytest.approx((10.0 - 0.1, 20.0 + 0.8))
    assert data.truth[0][3] == pytest.approx(0.5 + math.pi / 2)
    with pytest.raises(carmen.CarmenError, match='max_range'):
        carmen.replay_data(log, alignment, -1.0)


def test_replay_data_splice_moves_only_later_odometry(tmp_path):
    log, raw = small_log(tmp_path)
    plain = carmen.replay_data(log, carmen.Alignment(0, 0, 0), 5.0)
    t_k = 3.6
    offset = carmen.jump_offset(carmen.interpolate(plain.odometry, t_k), (3.0, 0.0, 0.0))
    spliced = carmen.replay_data(log, carmen.Alignment(0, 0, 0), 5.0,
                                 carmen.Splice(t_k, offset), plain.origin)
    for a, b in zip(plain.odometry, spliced.odometry):
        if a[0] < t_k:
            assert a == b
        else:
            assert carmen.compose(offset, a[1:]) == pytest.approx(b[1:])
    assert spliced.truth == plain.truth
    after = [(a, b) for a, b in zip(plain.scans, spliced.scans) if a[0] >= t_k]
    assert after and math.hypot(after[0][1][2][0] - after[0][0][2][0],
                                after[0][1][2][1] - after[0][0][2][1]) > 2.0
    with pytest.raises(carmen.CarmenError, match='finite'):
        carmen.replay_data(log, carmen.Alignment(0, 0, 0), 5.0,
                           carmen.Splice(math.nan, offset))


def test_scan_ranges_max_is_no_return():
    assert carmen.scan_ranges([1.0, 50.0, 60.0, 49.9], 50.0) == [1.0, math.inf, math.inf, 49.9]


def test_write_bag_topics_and_messages(tmp_path):
    import rosbag
    log, raw = small_log(tmp_path)
    data = carmen.replay_data(log, carmen.Alignment(0, 0, 0), 5.0)
    path = str(tmp_path / 'replay.bag')
    written = carmen.write_bag(path, data)
    assert written['scan'] == 2 and written['ground_truth'] == 2
    assert written['odom'] == len(data.odometry)
    assert written['first_stamp'] == carmen.START_OFFSET
    seen = {}
    with rosbag.Bag(path) as bag:
        info = bag.get_type_and_topic_info().topics
        assert info['/tf_static'].msg_type == 'tf2_msgs/TFMessage'
        assert info['/scan'].msg_type == 'sensor_msgs/LaserScan'
        assert info['/odom'].msg_type == 'nav_msgs/Odometry'
        assert info['/ground_truth'].msg_type == 'geometry_msgs/PoseStamped'
        for _, _, _, header in bag.read_messages(topics=['/tf_static'],
                                                 return_connection_header=True):
            assert header.get('latching') in ('1', b'1')
        for topic, msg, t in bag.read_messages():
            seen.setdefault(topic, []).append((msg, t))
    scan, t = seen['/scan'][0]
    assert scan.header.frame_id == 'base_laser_link'
    assert scan.ranges[1] == math.inf and scan.ranges[0] == 1.0
    assert scan.angle_min == pytest.approx(-math.pi / 2)
    assert scan.angle_increment == pytest.approx(math.pi / 180)
    assert scan.range_max == 5.0
    assert (t - scan.header.stamp).to_sec() == pytest.approx(carmen.SCAN_DELAY)
    assert scan.header.stamp.to_sec() == pytest.approx(carmen.stamp_of(data, raw[3][0]))
    tf = seen['/tf'][0][0].transforms[0]
    assert (tf.header.frame_id, tf.child_frame_id) == ('odom', 'base_footprint')
    static = seen['/tf_static'][0][0].transforms[0]
    assert (static.header.frame_id, static.child_frame_id) == ('base_footprint',
                                                               'base_laser_link')
    assert carmen.log_time_of(data, carmen.stamp_of(data, 4.2)) == pytest.approx(4.2)


def test_write_bag_window(tmp_path):
    log, raw = small_log(tmp_path)
    data = carmen.replay_data(log, carmen.Alignment(0, 0, 0), 5.0)
    written = carmen.write_bag(str(tmp_path / 'w.bag'), data, start=raw[8][0] - 0.1,
                               end=raw[11][0])
    assert written['scan'] == 1 and written['odom'] == 4
    with pytest.raises(carmen.CarmenError, match='no odometry or no scan'):
        carmen.write_bag(str(tmp_path / 'x.bag'), data, start=100.0, end=200.0)


def test_expected_updates_follows_the_motion_trigger():
    scans = [(0.0, (), (0.0, 0.0, 0.0)), (1.0, (), (0.1, 0.1, 0.0)),
             (2.0, (), (0.3, 0.1, 0.0)), (3.0, (), (0.3, 0.1, 0.1)),
             (4.0, (), (0.3, 0.1, 0.35)), (5.0, (), (0.3, 0.5, 0.35))]
    assert carmen.expected_updates(scans, 0.25, 0.2) == [0.0, 2.0, 4.0, 5.0]


def test_path_length():
    assert carmen.path_length([(0, 0, 0), (1, 3, 4), (2, 3, 4), (3, 3, 5)]) == \
        pytest.approx([0.0, 5.0, 5.0, 6.0])
    assert carmen.path_length([]) == []


def _room_scans(poses, laser_offset=0.1):
    """A 6 x 4 m room with a pillar; the 180-beam Carmen scans a laser sees from ``poses``."""
    import numpy as np
    from lost_and_found.core.scan_agreement import DistanceMap
    from lost_and_found.sim.gridmap import GridMap
    from lost_and_found.sim.laser import cast_rays
    res = 0.05
    occupied = np.zeros((80, 120), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    occupied[30:40, 70:76] = True                      # a pillar: no pose slides freely
    grid = GridMap.from_occupancy(occupied, res)
    angles = carmen.ANGLE_MIN + np.arange(180) * carmen.ANGLE_INCREMENT
    scans = []
    for t, (x, y, yaw) in enumerate(poses):
        lx, ly = x + laser_offset * math.cos(yaw), y + laser_offset * math.sin(yaw)
        ranges = cast_rays(grid, lx, ly, yaw + angles, 50.0)
        scans.append((float(t), tuple(float(r) for r in ranges), (0.0, 0.0, 0.0)))
    return DistanceMap(occupied, res), scans


def test_register_truth_moves_a_displaced_pose_back_and_keeps_a_right_one():
    right = [(1.5, 1.5, 0.3), (4.0, 2.5, 2.0)]
    distance_map, scans = _room_scans(right)
    displaced = [(0, 1.5 + 0.3, 1.5 - 0.2, 0.3 + math.radians(4.0)), (1, 4.0, 2.5, 2.0)]
    data = carmen.ReplayData([], scans, displaced, 0.0, 0.1, 50.0)
    registered = carmen.register_truth(data, distance_map)
    assert registered.moved == 1
    t, x, y, yaw = registered.truth[0]
    assert t == 0 and math.hypot(x - 1.5, y - 1.5) < 0.05 and abs(yaw - 0.3) < 0.01
    assert registered.shifts[0][0] == pytest.approx(math.hypot(0.3, 0.2), abs=0.05)
    assert registered.truth[1] == displaced[1] and registered.shifts[1] == (0.0, 0.0)


def test_register_truth_keeps_a_pose_whose_scan_has_no_usable_beam():
    distance_map, scans = _room_scans([(1.5, 1.5, 0.3)])
    blind = [(0.0, tuple([60.0] * 180), (0.0, 0.0, 0.0))]       # every beam at max range
    data = carmen.ReplayData([], blind, [(0, 1.8, 1.3, 0.3)], 0.0, 0.1, 50.0)
    registered = carmen.register_truth(data, distance_map)
    assert registered.moved == 0 and registered.truth == [(0, 1.8, 1.3, 0.3)]
