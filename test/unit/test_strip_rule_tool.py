"""tools/strip_rule.py: the strip rule scored on a recorded run, a synthetic one in a room."""
import math

import pytest

from lost_and_found.bench import detection, report
from lost_and_found.sim.gridmap import GridMap, save_map
from test_strip_check import RES, ROOM, scan
from tool_loader import load_tool

BASE = '''lost_detector: {queue_min: 2, window_meta_tier2_lost: 3,
                ratio_thresh_detections_tier2_lost: 0.5, window_meta_tier0_normal: 3}
scan_check: {enabled: false}
'''


def write_turning_run(folder, wrong_from=15.0):
    """A robot turning in place at (4, 3) in the room, a reading every 0.5 s for 30 s, each
    with its scan (odometry: the truth); amcl's estimate right, then from ``wrong_from`` 2.2
    m off at (2, 2) with the right heading and a tight covariance (a silent delocalization
    the covariance cannot see)."""
    readings, truth, returns = [], [], []
    for k in range(61):
        t = 0.5 * k
        pose = (4.0, 3.0, math.remainder(0.3 * k, 2.0 * math.pi))
        estimate = pose if t < wrong_from else (2.0, 2.0, pose[2])
        readings.append((t,) + estimate + (0.01, 0.01, 0.0, 0.001))
        truth.append((t,) + pose)
        returns.append((scan(pose), pose))
    record = {'index': 0, 'kind': 'teleport', 'distance': 2.2, 't_reset': 0.0,
              't_normal': 2.0, 't_event': wrong_from, 't_end': 30.0, 'pose_fixes': [0.0]}
    stream = detection.Stream(readings, truth)
    detection.write_stream(str(folder / 'detection_stream.json'), stream, [record], 'room',
                           None)
    detection.write_truth(str(folder / detection.TRUTH_FILE), truth)
    detection.write_returns(str(folder / detection.RETURNS_FILE), returns)
    save_map(GridMap.from_occupancy(ROOM, RES, (0.0, 0.0, 0.0)), str(folder / 'room.yaml'))
    report.write_json(str(folder / 'detection.json'), {
        'trials': [record], 'summary': {'phases': detection.PHASES},
        'map': str(folder / 'room.yaml')})
    (folder / 'base.yaml').write_text(BASE)


def test_the_rule_catches_what_the_covariance_cannot_and_the_base_line_comes_first(
        tmp_path, capsys):
    write_turning_run(tmp_path)
    tool = load_tool('strip_rule')
    assert tool.main([str(tmp_path), '--base', str(tmp_path / 'base.yaml'), '--ratios', '0.6',
                      '--rules', '2/3', '--min-distances', '1', '--min-points', '40']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith('base (') and lines[2].endswith('0/1  false 0 + 0')
    assert lines[3].startswith('window 10 ratio 0.6 min_distance 1 count 2 of 3')
    assert lines[3].endswith('1/1  false 0 + 0')


def test_a_place_nearer_than_min_distance_is_no_evidence(tmp_path, capsys):
    write_turning_run(tmp_path)
    tool = load_tool('strip_rule')
    assert tool.main([str(tmp_path), '--base', str(tmp_path / 'base.yaml'), '--ratios', '0.6',
                      '--rules', '2/3', '--min-distances', '50', '--min-points', '40']) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith('0/1  false 0 + 0')


@pytest.mark.parametrize('args, message', [
    (['--rules', '4/3'], '--rules 4/3: need 1 <= COUNT <= READINGS'),
    (['--rules', 'x'], '--rules x: must be COUNT/READINGS'),
    (['--map', 'nothing'], '--map nothing: must be RUN_DIR=MAP.yaml'),
    (['--slacks', '0.3'], '--slacks 0.3: must be XY/YAW'),
    (['--slacks', '5/0'], '--slacks 5/0: need 0 <= XY <= 0.5'),
])
def test_bad_arguments_are_named(tmp_path, capsys, args, message):
    write_turning_run(tmp_path)
    tool = load_tool('strip_rule')
    assert tool.main([str(tmp_path), '--base', str(tmp_path / 'base.yaml')] + args) == 1
    assert message in capsys.readouterr().err


def test_a_run_without_returns_or_map_is_named(tmp_path, capsys):
    write_turning_run(tmp_path)
    (tmp_path / detection.RETURNS_FILE).unlink()
    tool = load_tool('strip_rule')
    assert tool.main([str(tmp_path), '--base', str(tmp_path / 'base.yaml')]) == 1
    assert 'no detection_returns.json' in capsys.readouterr().err
    (tmp_path / 'room.yaml').unlink()
    assert tool.main([str(tmp_path), '--base', str(tmp_path / 'base.yaml')]) == 1
    assert 'is not found: give --map' in capsys.readouterr().err


def test_write_puts_one_rule_last_in_the_yaml_and_keep_fit_keeps_it(tmp_path, capsys):
    from lost_and_found.bench import calibration, detectors
    write_turning_run(tmp_path)
    tool = load_tool('strip_rule')
    yaml_path = str(tmp_path / 'base.yaml')
    args = [str(tmp_path), '--base', yaml_path, '--ratios', '0.6', '--rules', '2/3',
            '--min-distances', '1', '--min-points', '40', '--slacks', '0.3/0.2']
    assert tool.main(args + ['--write', yaml_path]) == 0
    config = detectors.load_detector_config(yaml_path)
    assert (config.strip_count, config.strip_readings, config.strip_ratio,
            config.strip_slack_xy, config.strip_slack_yaw) == (2, 3, 0.6, 0.3, 0.2)
    text = (tmp_path / 'base.yaml').read_text()
    assert text.startswith(BASE) and text.rstrip().endswith('slack_yaw: 0.2')
    assert 'Training runs: 1/1 silent' in text and '--write' in text
    assert all(len(line) <= 100 for line in text.splitlines())
    # Again: the section is replaced, not added.
    assert tool.main(args + ['--write', yaml_path]) == 0
    assert (tmp_path / 'base.yaml').read_text() == text
    # The section splits off whole, and goes back after another text.
    rest, section = calibration.split_strip_section(text)
    assert rest == BASE and section.startswith('# The strip rule') and \
        calibration.with_strip_section(rest, section) == BASE + '\n' + section
    assert calibration.split_strip_section(BASE) == (BASE, '')
    # Several values of a number: nothing to write.
    capsys.readouterr()
    assert tool.main(args + ['--ratios', '0.5', '0.6', '--write', yaml_path]) == 1
    assert '--write needs one value of every number' in capsys.readouterr().err
