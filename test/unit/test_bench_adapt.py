"""Unit tests of lost_and_found.bench.adapt and tools/adapt_detector.py: the covariance classes
of the detector YAML scaled to a robot's own localizer."""
import os

import numpy as np
import pytest
import yaml

from lost_and_found.bench import adapt, calibration, detectors
from lost_and_found.core.lost_detector import build_classifier
from tool_loader import load_tool

SHIPPED = detectors.load_detector_config(calibration.TARGET_PATH)


def _readings(sigma_xy, sigma_theta, t0=0.0, dt=0.5):
    """Readings with these standard deviations (x along the major axis, y smaller)."""
    return [(t0 + i * dt, sx * sx, (0.5 * sx) ** 2, 0.0, st * st)
            for i, (sx, st) in enumerate(zip(sigma_xy, sigma_theta))]


def test_the_factors_are_the_medians_over_the_simulated_localizers_medians():
    rng = np.random.default_rng(1)
    sx = np.abs(rng.normal(0.6, 0.1, 301))
    st = np.abs(rng.normal(0.2, 0.05, 301))
    features, refused = adapt.features_of(_readings(sx, st))
    assert refused == {}
    factors, medians = adapt.scale_factors(features)
    assert medians == pytest.approx((np.median(sx), np.median(st)))
    assert factors == pytest.approx((np.median(sx) / adapt.SIM_MEDIANS[0],
                                     np.median(st) / adapt.SIM_MEDIANS[1]))
    # A recording of the simulated localizer itself comes out unscaled.
    sim = _readings([adapt.SIM_MEDIANS[0]] * 150, [adapt.SIM_MEDIANS[1]] * 150)
    assert adapt.scale_factors(adapt.features_of(sim)[0])[0] == pytest.approx((1.0, 1.0))


def test_a_lost_stretch_moves_the_median_less_than_the_mean():
    # 300 localized readings spread over 0.3-0.7 m (median 0.5), then 100 of a localizer that
    # lost track at 3 m: the median moves to the localized readings' 2/3 quantile, about
    # 0.57 m; the mean would be 1.1 m.
    sx = list(np.linspace(0.3, 0.7, 300)) + [3.0] * 100
    features, _ = adapt.features_of(_readings(sx, [0.1] * 400))
    _, medians = adapt.scale_factors(features)
    assert medians[0] == pytest.approx(0.3 + 0.4 * 200 / 299, abs=2e-3)
    assert medians[0] < np.mean(sx) / 1.9


def test_too_few_readings_and_no_covariance_are_refused():
    features, _ = adapt.features_of(_readings([0.5] * (adapt.MIN_READINGS - 1),
                                              [0.1] * (adapt.MIN_READINGS - 1)))
    with pytest.raises(adapt.AdaptError, match='need at least %d' % adapt.MIN_READINGS):
        adapt.scale_factors(features)
    features, _ = adapt.features_of(_readings([0.0] * 200, [0.1] * 200))
    with pytest.raises(adapt.AdaptError, match='median sigma_xy'):
        adapt.scale_factors(features)
    few, _ = adapt.features_of(_readings([0.5] * 10, [0.1] * 10))
    with pytest.raises(adapt.AdaptError, match='refused as the node would: 300 not_finite'):
        adapt.scale_factors(few, {'not_finite': 300})


def test_readings_the_node_would_refuse_are_counted_not_used():
    readings = _readings([0.5] * 3, [0.1] * 3)
    readings[1] = (1.0, float('nan'), 0.1, 0.0, 0.01)
    readings[2] = (2.0, 0.1, 0.1, 0.0, -0.01)
    features, refused = adapt.features_of(readings)
    assert features.shape == (1, 2)
    assert refused == {'not_finite': 1, 'negative_variance': 1}


def test_the_settle_skips_the_first_seconds():
    readings = _readings([0.5] * 100, [0.1] * 100, t0=10.0, dt=1.0)
    kept = adapt.after_settle(readings, 30.0)
    assert kept[0][0] == 40.0 and len(kept) == 70
    assert adapt.after_settle([], 30.0) == []
    with pytest.raises(adapt.AdaptError, match='settle'):
        adapt.after_settle(readings, -1.0)


def _source_text():
    with open(calibration.TARGET_PATH) as stream:
        return stream.read()


def test_the_adapted_classifier_is_the_source_on_features_divided_by_the_factors():
    factors = (5.0, 3.0)
    text = adapt.render(_source_text(), SHIPPED, factors, ['a header'])
    adapted = detectors.config_from_text(text, 'adapted')
    rng = np.random.default_rng(2)
    features = np.column_stack([rng.uniform(0.01, 3.0, 500), rng.uniform(0.005, 1.0, 500)])
    p_adapted = build_classifier(adapted).predict_proba(features)[:, 1]
    p_source = build_classifier(SHIPPED).predict_proba(features / np.array(factors))[:, 1]
    # The YAML keeps 4 significant digits of every scaled number.
    assert np.allclose(p_adapted, p_source, atol=2e-3)
    # Nothing else changed.
    for field in ('prob_thresh', 'tier0_normal_prior', 'scan_miss_mu', 'scan_miss_sigma',
                  'window_meta_tier2_lost', 'settle_readings', 'open_beams', 'short_weight'):
        assert getattr(adapted, field) == getattr(SHIPPED, field)
    assert adapted.slice_mu != SHIPPED.slice_mu


def test_render_puts_the_header_on_top_and_keeps_every_other_line():
    source = _source_text()
    text = adapt.render(source, SHIPPED, (2.0, 2.0), ['first paragraph', 'second ' * 30])
    lines = text.splitlines()
    assert lines[0] == '# first paragraph'
    assert all(len(line) <= 100 for line in lines[:6])
    body = text[text.index('\n#\n') + 3:]
    changed = [(a, b) for a, b in zip(source.splitlines(), body.splitlines()) if a != b]
    assert len(body.splitlines()) == len(source.splitlines())
    assert [a.split(':')[0].strip() for a, _ in changed] == ['slice_mu', 'slice_sigma']
    assert yaml.safe_load(text) is not None


def test_render_can_turn_the_through_share_off_and_changes_nothing_else():
    source = _source_text()
    assert yaml.safe_load(source)['scan_check']['through_lost'] < 1.0   # the shipped file's
    text = adapt.render(source, SHIPPED, (2.0, 2.0), [], through_lost=1.0)
    assert yaml.safe_load(text)['scan_check']['through_lost'] == 1.0
    changed = [a.split(':')[0].strip() for a, b in zip(source.splitlines(), text.splitlines())
               if a != b]
    # The burst rule, which reads the same share, goes off with it.
    assert yaml.safe_load(source)['scan_check']['burst_count'] > 0   # the shipped file's
    assert changed == ['slice_mu', 'slice_sigma', 'through_lost', 'burst_count']
    assert yaml.safe_load(text)['scan_check']['burst_count'] == 0
    kept = adapt.render(source, SHIPPED, (2.0, 2.0), [])
    assert yaml.safe_load(kept)['scan_check']['through_lost'] == \
        yaml.safe_load(source)['scan_check']['through_lost']
    twice = source + '\nother:\n  through_lost: 0.3\n'
    with pytest.raises(adapt.AdaptError, match='through_lost more than once'):
        adapt.render(twice, SHIPPED, (2.0, 2.0), [], through_lost=1.0)
    twice = source + '\nother:\n  burst_count: 3\n'
    with pytest.raises(adapt.AdaptError, match='burst_count more than once'):
        adapt.render(twice, SHIPPED, (2.0, 2.0), [], through_lost=1.0)
    # Without the key the node's default (off) holds: nothing to set, nothing refused.
    without = '\n'.join(line for line in source.splitlines()
                        if not line.strip().startswith('through_lost:'))
    assert 'through_lost:' not in adapt.render(without, SHIPPED, (2.0, 2.0), [],
                                               through_lost=1.0)


def test_render_refuses_a_yaml_without_the_one_line_lists():
    source = _source_text()
    no_mu = '\n'.join(line for line in source.splitlines()
                      if not line.strip().startswith('slice_mu:'))
    with pytest.raises(adapt.AdaptError, match='slice_mu exactly once'):
        adapt.render(no_mu, SHIPPED, (2.0, 2.0), [])
    twice = source + '\nother:\n  slice_sigma: [1, 2, 3, 4]\n'
    with pytest.raises(adapt.AdaptError, match='slice_sigma exactly once'):
        adapt.render(twice, SHIPPED, (2.0, 2.0), [])


def _write_bag(path, sigmas, topic='/amcl_pose', t0=100.0, bad=lambda cov: None):
    import rosbag
    import rospy
    from geometry_msgs.msg import PoseWithCovarianceStamped
    with rosbag.Bag(path, 'w') as bag:
        for i, sigma in enumerate(sigmas):
            msg = PoseWithCovarianceStamped()
            msg.header.stamp = rospy.Time.from_sec(t0 + 0.5 * i)
            cov = [0.0] * 36
            cov[0], cov[7], cov[35] = sigma ** 2, (0.5 * sigma) ** 2, (sigma / 4) ** 2
            bad(cov)
            msg.pose.covariance = cov
            bag.write(topic, msg, msg.header.stamp)


def test_a_bag_gives_its_amcl_readings_and_names_what_is_wrong(tmp_path):
    path = str(tmp_path / 'loc.bag')
    _write_bag(path, [0.4, 0.5, 0.6])
    readings, refused, notes = adapt.readings_from_bag(path)
    assert refused == {} and notes == []
    assert [r[0] for r in readings] == pytest.approx([100.0, 100.5, 101.0])
    assert all(r[5] is None for r in readings)      # no map: no scan feature
    assert readings[1][1] == pytest.approx(0.25)
    with pytest.raises(adapt.AdaptError, match=r'no topic /pose \(it has /amcl_pose\)'):
        adapt.readings_from_bag(path, '/pose')
    import rosbag
    from std_msgs.msg import String
    other = str(tmp_path / 'other.bag')
    with rosbag.Bag(other, 'w') as bag:
        bag.write('/amcl_pose', String('x'))
    with pytest.raises(adapt.AdaptError, match='std_msgs/String, not'):
        adapt.readings_from_bag(other)
    with pytest.raises(adapt.AdaptError, match='cannot read the bag'):
        adapt.readings_from_bag(str(tmp_path / 'missing.bag'))


def test_the_tool_writes_a_yaml_the_node_loads(tmp_path, capsys):
    tool = load_tool('adapt_detector')
    bag = str(tmp_path / 'loc.bag')
    _write_bag(bag, [0.6] * 20 + [0.5] * 200)   # the first 10 s: amcl converging
    out = str(tmp_path / 'robot.yaml')
    assert tool.main([bag, '--out', out, '--settle', '10', '--date', '2026-11-28']) == 0
    printed = capsys.readouterr().out
    assert '200 after the first 10 s' in printed
    adapted = detectors.load_detector_config(out)
    # median 0.5 m and 0.125 rad against the simulated localizer's medians
    assert adapted.slice_mu[0] == pytest.approx(
        SHIPPED.slice_mu[0] * 0.5 / adapt.SIM_MEDIANS[0], rel=1e-3)
    assert adapted.slice_mu[1] == pytest.approx(
        SHIPPED.slice_mu[1] * 0.125 / adapt.SIM_MEDIANS[1], rel=1e-3)
    with open(out) as stream:
        assert stream.readline().startswith('# lost_detector parameters ADAPTED')


def test_the_tool_refuses_bad_input_with_a_message(tmp_path, capsys):
    tool = load_tool('adapt_detector')
    bag = str(tmp_path / 'loc.bag')
    _write_bag(bag, [0.5] * 50)
    assert tool.main([bag, '--out', str(tmp_path / 'x.yaml')]) == 1
    assert 'need at least' in capsys.readouterr().err
    assert tool.main([bag, '--out', calibration.TARGET_PATH]) == 1
    assert "the package's config folder" in capsys.readouterr().err
    assert tool.main([bag, '--real-logs', str(tmp_path), '--log', 'intel',
                      '--out', str(tmp_path / 'x.yaml')]) == 1
    assert 'not both or neither' in capsys.readouterr().err
    assert not os.path.exists(str(tmp_path / 'x.yaml'))


def test_a_real_logs_run_gives_its_unmodified_replay_with_the_scan_feature(tmp_path):
    from test_bench_calibration import TRACKING, write_real_logs_run
    write_real_logs_run(tmp_path)
    readings = adapt.readings_from_real_logs(str(tmp_path), 'intel', 'stock', SHIPPED)
    # The unmodified replay of write_real_logs_run: 1 reading a second from 100 s to 399 s,
    # the localizer tracking, clutter misses (short ones) every 17th reading.
    assert [r[0] for r in readings] == [100.0 + k for k in range(300)]
    assert readings[0][1] == pytest.approx(TRACKING[0] ** 2)
    assert readings[1][5] == pytest.approx(SHIPPED.short_weight * 0.02)
    assert readings[17][5] == pytest.approx(SHIPPED.short_weight * 0.3)
    with pytest.raises(adapt.AdaptError, match="no replay of log 'aces'"):
        adapt.readings_from_real_logs(str(tmp_path), 'aces', 'stock', SHIPPED)
    with pytest.raises(adapt.AdaptError, match='missing'):
        adapt.readings_from_real_logs(str(tmp_path / 'nowhere'), 'intel', 'stock', SHIPPED)


def test_only_the_readings_whose_scan_agrees_count():
    agree = [r + (0.02,) for r in _readings([0.5] * 150, [0.1] * 150)]
    disagree = [r + (0.9,) for r in _readings([3.0] * 100, [1.0] * 100, t0=100.0)]
    blind = [r + (None,) for r in _readings([3.0] * 10, [1.0] * 10, t0=200.0)]
    kept, without_scan, disagreeing = adapt.agreeing(agree + disagree + blind, SHIPPED)
    assert kept == agree and without_scan == 10 and disagreeing == 100
    assert adapt.agreeing(blind, SHIPPED) == ([], 10, 0)


def test_thirds_that_differ_are_flagged():
    even, _ = adapt.features_of(_readings([0.5] * 300, [0.1] * 300))
    factors, uneven = adapt.thirds(even)
    assert factors == pytest.approx([0.5 / adapt.SIM_MEDIANS[0]] * 3) and not uneven
    # The localizer lost track in the first third: its cloud was 4 times as wide there.
    lost_first, _ = adapt.features_of(_readings([2.0] * 100 + [0.5] * 200, [0.1] * 300))
    factors, uneven = adapt.thirds(lost_first)
    assert factors[0] == pytest.approx(4 * factors[1]) and uneven


def test_the_tool_warns_when_the_recording_was_not_localized_throughout(tmp_path, capsys):
    tool = load_tool('adapt_detector')
    bag = str(tmp_path / 'loc.bag')
    _write_bag(bag, [2.0] * 100 + [0.5] * 200)
    assert tool.main([bag, '--out', str(tmp_path / 'robot.yaml'), '--settle', '0']) == 0
    assert 'WARNING: they differ' in capsys.readouterr().out


def _nan_z(cov):
    """A NaN where the reading keeps nothing (z-z): the node refuses the pose all the same."""
    cov[14] = float('nan')


def _asymmetric(cov):
    cov[1], cov[6] = 0.01, 0.02


def test_a_bag_leaves_out_the_poses_the_node_would_refuse(tmp_path):
    for bad, kind in ((_nan_z, 'not_finite'), (_asymmetric, 'not_symmetric')):
        path = str(tmp_path / ('%s.bag' % kind))
        _write_bag(path, [0.5] * 4, bad=bad)
        readings, refused, _ = adapt.readings_from_bag(path)
        assert readings == [] and refused == {kind: 4}


def test_the_tool_names_the_refused_poses_when_too_few_are_left(tmp_path, capsys):
    tool = load_tool('adapt_detector')
    bag = str(tmp_path / 'nan.bag')
    _write_bag(bag, [0.5] * 300, bad=_nan_z)
    assert tool.main([bag, '--out', str(tmp_path / 'x.yaml')]) == 1
    err = capsys.readouterr().err
    assert '0 usable amcl poses' in err and '300 not_finite' in err


def test_the_tool_refuses_a_non_mapping_config_and_the_config_folder(tmp_path, capsys):
    tool = load_tool('adapt_detector')
    bag = str(tmp_path / 'loc.bag')
    _write_bag(bag, [0.5] * 200)
    listed = tmp_path / 'list.yaml'
    listed.write_text('- 1\n- 2\n')
    assert tool.main([bag, '--config', str(listed), '--out', str(tmp_path / 'x.yaml')]) == 1
    assert 'not a YAML mapping' in capsys.readouterr().err
    other = os.path.join(calibration.ROOT, 'config', 'lost_and_found.yaml')
    assert tool.main([bag, '--out', other]) == 1
    assert "the package's config folder" in capsys.readouterr().err
    assert tool.main(['--real-logs', str(tmp_path), '--out', str(tmp_path / 'x.yaml')]) == 1
    assert '--real-logs needs --log' in capsys.readouterr().err
    assert tool.main([bag, '--out', str(tmp_path / 'missing' / 'x.yaml')]) == 1
    assert 'No such file or directory' in capsys.readouterr().err


def _wall_map(tmp_path):
    """A 6 x 6 m map_server map, 0.1 m cells, free but for a wall along x = 5 m."""
    from PIL import Image
    pixels = np.full((60, 60), 254, dtype=np.uint8)
    pixels[:, 50] = 0
    Image.fromarray(pixels).save(str(tmp_path / 'wall.pgm'))
    (tmp_path / 'wall.yaml').write_text(yaml.safe_dump({
        'image': 'wall.pgm', 'resolution': 0.1, 'origin': [0.0, 0.0, 0.0], 'negate': 0,
        'occupied_thresh': 0.65, 'free_thresh': 0.196}))
    return str(tmp_path / 'wall.yaml')


def _scan_bag(path, poses, with_mount=True, mount_topic='/tf_static', laser='laser',
              pose_first=False):
    """A bag of a robot at (2, 3) facing the wall, its laser (frame ``laser``) 0.1 m ahead of
    base_footprint (the mount on ``mount_topic``): per ``(sigma, pose)`` of ``poses`` a scan
    of the wall and an amcl pose there, the pose recorded 0.05 s after its scan, or before it
    with ``pose_first``."""
    import math
    import rosbag
    import rospy
    from geometry_msgs.msg import PoseWithCovarianceStamped, TransformStamped
    from sensor_msgs.msg import LaserScan
    from tf2_msgs.msg import TFMessage
    from lost_and_found.nodes.conversions import quaternion_from_yaw
    angles = np.linspace(-0.5, 0.5, 41)
    with rosbag.Bag(path, 'w') as bag:
        start = rospy.Time.from_sec(50.0)
        if with_mount:
            mount = TransformStamped()
            mount.header.stamp = start
            mount.header.frame_id, mount.child_frame_id = 'base_footprint', 'laser'
            mount.transform.translation.x = 0.1
            mount.transform.rotation.w = 1.0
            bag.write(mount_topic, TFMessage([mount]), start)
        for i, (sigma, pose) in enumerate(poses):
            stamp = rospy.Time.from_sec(100.0 + 0.5 * i)
            scan = LaserScan()
            scan.header.stamp, scan.header.frame_id = stamp, laser
            scan.angle_min, scan.angle_increment = float(angles[0]), float(angles[1] - angles[0])
            scan.range_min, scan.range_max = 0.1, 10.0
            scan.ranges = [(5.0 - 2.1) / math.cos(a) for a in angles]
            bag.write('/scan', scan, stamp + rospy.Duration(0.1 if pose_first else 0.0))
            msg = PoseWithCovarianceStamped()
            msg.header.stamp, msg.header.frame_id = stamp, 'map'
            msg.pose.pose.position.x, msg.pose.pose.position.y = pose[0], pose[1]
            msg.pose.pose.orientation = quaternion_from_yaw(pose[2])
            cov = [0.0] * 36
            cov[0], cov[7], cov[35] = sigma ** 2, (0.5 * sigma) ** 2, (sigma / 4) ** 2
            msg.pose.covariance = cov
            bag.write('/amcl_pose', msg, stamp + rospy.Duration(0.05))


def test_a_bag_with_its_scans_and_the_map_counts_only_the_localized_poses(tmp_path, capsys):
    # 150 poses at the truth (the scan fits the wall) with a 0.3-0.7 m cloud, 100 at a pose
    # 1.5 m too far ahead (the scan runs through the wall) with a 3 m cloud: a localizer that
    # had lost track for a while.
    poses = [(s, (2.0, 3.0, 0.0)) for s in np.linspace(0.3, 0.7, 150)] + \
        [(3.0, (3.5, 3.0, 0.0))] * 100
    bag = str(tmp_path / 'scans.bag')
    _scan_bag(bag, poses)
    map_path = _wall_map(tmp_path)
    readings, refused, notes = adapt.readings_from_bag(bag, config=SHIPPED, map_path=map_path)
    assert refused == {} and notes == [] and len(readings) == 250
    assert all(r[5] is not None for r in readings)
    assert max(r[5] for r in readings[:150]) < 0.1 and min(r[5] for r in readings[150:]) > 0.9
    tool = load_tool('adapt_detector')
    out = str(tmp_path / 'robot.yaml')
    assert tool.main([bag, '--map', map_path, '--settle', '0', '--out', out]) == 0
    printed = capsys.readouterr().out
    assert '150 whose scan agrees with the map' in printed and '100 whose scan disagrees' \
        in printed
    assert detectors.load_detector_config(out).slice_mu[0] == pytest.approx(
        SHIPPED.slice_mu[0] * 0.5 / adapt.SIM_MEDIANS[0], rel=1e-3)
    # --all-readings: the lost stretch counts too, and the median moves.
    assert tool.main([bag, '--map', map_path, '--settle', '0', '--all-readings',
                      '--out', out]) == 0
    assert detectors.load_detector_config(out).slice_mu[0] > \
        SHIPPED.slice_mu[0] * 0.6 / adapt.SIM_MEDIANS[0]


def test_a_bag_without_the_laser_mount_or_the_scan_topic_says_so(tmp_path):
    bag = str(tmp_path / 'nomount.bag')
    _scan_bag(bag, [(0.5, (2.0, 3.0, 0.0))] * 3, with_mount=False)
    map_path = _wall_map(tmp_path)
    readings, _, notes = adapt.readings_from_bag(bag, config=SHIPPED, map_path=map_path)
    assert [r[5] for r in readings] == [None] * 3
    assert len(notes) == 2 and "no transform from base_footprint to the scans' frame 'laser'" \
        in notes[0] and '3 no scan stamped like the pose' in notes[1]
    with pytest.raises(adapt.AdaptError, match='no topic /base_scan.*--scan-topic'):
        adapt.readings_from_bag(bag, config=SHIPPED, map_path=map_path,
                                scan_topic='/base_scan')
    with pytest.raises(adapt.AdaptError, match='cannot read map YAML'):
        adapt.readings_from_bag(bag, config=SHIPPED, map_path=str(tmp_path / 'no.yaml'))


@pytest.mark.parametrize('pose_first,mount_topic', [(True, '/tf_static'), (False, '/tf')])
def test_poses_before_their_scans_and_a_mount_on_tf(tmp_path, pose_first, mount_topic):
    bag = str(tmp_path / 'order.bag')
    _scan_bag(bag, [(0.5, (2.0, 3.0, 0.0))] * 5, mount_topic=mount_topic,
              pose_first=pose_first)
    readings, _, notes = adapt.readings_from_bag(bag, config=SHIPPED,
                                                 map_path=_wall_map(tmp_path))
    # Before the first scan a pose cannot wait for one (the laser may not be there at all).
    with_feature = [r[5] is not None for r in readings]
    assert with_feature == ([False] + [True] * 4 if pose_first else [True] * 5), notes


def test_a_frame_tf_refuses_is_a_note_not_a_traceback(tmp_path):
    bag = str(tmp_path / 'slash.bag')
    _scan_bag(bag, [(0.5, (2.0, 3.0, 0.0))] * 3, laser='/laser')
    _, _, notes = adapt.readings_from_bag(bag, config=SHIPPED, map_path=_wall_map(tmp_path))
    assert "the scans' frame '/laser'" in notes[0]


def test_a_map_no_pose_can_be_checked_on_or_that_disagrees(tmp_path, capsys):
    tool = load_tool('adapt_detector')
    map_path = _wall_map(tmp_path)
    blind = str(tmp_path / 'blind.bag')
    _scan_bag(blind, [(0.5, (2.0, 3.0, 0.0))] * 150, with_mount=False)
    out = str(tmp_path / 'x.yaml')
    assert tool.main([blind, '--map', map_path, '--settle', '0', '--out', out]) == 1
    err = capsys.readouterr().err
    assert 'no pose got the scan feature' in err and 'no transform from' in err
    assert tool.main([blind, '--map', map_path, '--settle', '0', '--base-frame', 'base_link',
                      '--out', out]) == 1
    assert 'no transform from base_link' in capsys.readouterr().err
    assert tool.main([blind, '--map', map_path, '--settle', '0', '--all-readings',
                      '--out', out]) == 0
    capsys.readouterr()
    wrong = str(tmp_path / 'wrong.bag')     # every pose 1.5 m ahead of where the scan fits
    _scan_bag(wrong, [(0.5, (3.5, 3.0, 0.0))] * 150)
    assert tool.main([wrong, '--map', map_path, '--settle', '0', '--out', out]) == 1
    assert 'only 0 of the 150 poses' in capsys.readouterr().err


def test_a_bag_damaged_part_way_is_a_message(tmp_path):
    bag = str(tmp_path / 'damaged.bag')
    _write_bag(bag, [0.5] * 400)
    size = os.path.getsize(bag)
    with open(bag, 'r+b') as stream:
        stream.seek(size // 2)
        stream.write(b'\xff' * 2048)
    with pytest.raises(adapt.AdaptError, match='cannot read the bag'):
        adapt.readings_from_bag(bag)


def test_a_bags_scans_are_read_against_the_map_with_its_unknown_cells(tmp_path):
    # As the node reads map_server's map: a cell that is neither free nor occupied is
    # unknown, which scan_check/unmapped_ends reads (a beam ending there says nothing).
    from lost_and_found.sim.gridmap import GridMap, save_map
    occupied = np.zeros((20, 20), dtype=bool)
    occupied[0, :] = True
    free = ~occupied
    free[10:, 10:] = False                      # a corner the mapping run never saw
    save_map(GridMap(occupied, free, 0.05), str(tmp_path / 'm.yaml'))
    config = detectors.load_detector_config(calibration.TARGET_PATH)
    scans = adapt._BagScans(config, str(tmp_path / 'm.yaml'))
    distance_map = scans.checker.distance_map
    assert not distance_map.free[15, 15] and distance_map.free[5, 5]
    assert list(distance_map.near_unmapped([0.75, 0.25], [0.75, 0.25], 0.1)) == [True, False]
