"""The quick variant of every benchmark suite (``bench <suite> --quick``), run by ``make test``
to keep the harness working: a few short trials on the real ROS graph, each suite's outputs
checked for shape and sense. Not a measurement: the figures come from ``make bench``.

Each suite starts its own ROS master on a free port, so this never touches another graph.
"""
import json
import os
import shutil
import subprocess

import pytest

#: Wall seconds one quick suite may take before it counts as hung.
TIMEOUT = 600


def run_suite(suite, out, *extra):
    """Run ``rosrun lost_and_found bench <suite> --quick`` and return (exit code, output)."""
    command = ['rosrun', 'lost_and_found', 'bench', suite, '--quick', '--seed', '3',
               '--out', str(out)] + list(extra)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=TIMEOUT, text=True)
    return done.returncode, done.stdout


def load(out, suite):
    with open(os.path.join(str(out), '%s.json' % suite.replace('-', '_'))) as stream:
        return json.load(stream)


def check_common(out, suite, output):
    """Every suite writes JSON with its command and seed, a Markdown table and its plots."""
    result = load(out, suite)
    assert result['seed'] == 3 and '--quick' in result['command'], output[-2000:]
    with open(os.path.join(str(out), '%s.md' % suite.replace('-', '_'))) as stream:
        text = stream.read()
    assert result.get('skipped') or '|---' in text
    for plot in result.get('plots', []):
        with open(os.path.join(str(out), plot), 'rb') as stream:
            assert stream.read(8) == b'\x89PNG\r\n\x1a\n'
    return result


def test_detection_quick(tmp_path):
    code, output = run_suite('detection', tmp_path)
    assert code == 0, output[-3000:]
    result = check_common(tmp_path, 'detection', output)
    assert len(result['trials']) == 2 and result['summary']['readings'] > 0
    assert set(result['summary']['detectors']) == {'lost_detector', 'amcl_diag',
                                                   'nav2_islocalized'}
    for trial in result['trials']:
        assert trial['t_normal'] < trial['t_event'] < trial['t_end']
    # One trial may legitimately give no reading after its event: a silent teleport can put the
    # robot nose to a wall its navigator does not know of, and amcl publishes only after motion;
    # the navigator's first way out (a rotation) comes only after its progress timeout, 10 s,
    # twice: longer than a quick trial's 15 s. The driver must still keep some robot moving
    # after the events.
    assert sum(t['readings_after'] for t in result['trials']) > 0, \
        'the robot stopped driving after the events'
    with open(tmp_path / 'detection_stream.json') as stream:
        assert len(json.load(stream)['readings']) == result['summary']['readings']
    # The run rescored with the YAML it ran with (tools/rescore_detection.py) gives its own
    # scores back: the stream, the truth and the trials hold everything the suite scored.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    again = tmp_path / 'rescored'
    done = subprocess.run(['/usr/bin/python3', os.path.join(root, 'tools', 'rescore_detection.py'),
                           str(tmp_path), '--detector-config',
                           os.path.join(root, 'config', 'lost_detector.yaml'),
                           '--out', str(again)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT,
                          text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    rescored = load(again, 'detection')
    assert [t['detectors'] for t in rescored['trials']] == \
        [t['detectors'] for t in result['trials']]


def test_recovery_quick_on_a_map_it_has_never_seen(tmp_path):
    # The office map under a name of its own, with no fiducial map beside it: the bench hangs
    # the tags itself (--fiducials auto), as it must for any map_server map.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    maps = tmp_path / 'maps'
    maps.mkdir()
    shutil.copy(os.path.join(root, 'maps', 'office.pgm'), str(maps / 'office.pgm'))
    shutil.copy(os.path.join(root, 'maps', 'office.yaml'), str(maps / 'unseen.yaml'))
    out = tmp_path / 'out'
    code, output = run_suite('recovery', out, '--map', str(maps / 'unseen.yaml'),
                             '--fiducials', 'auto')
    assert code == 0, output[-3000:]
    result = check_common(out, 'recovery', output)
    assert result['fiducials'] == str(out / 'unseen_fiducials.yaml')
    with open(result['fiducials']) as stream:
        assert 'bench --fiducials auto' in stream.readline()
    assert [t['strategy'] for t in result['trials']] == ['spiral', 'reactive', 'none']
    for trial in result['trials']:
        assert 'error' not in trial, trial
        assert trial['kidnap_distance'] >= 5.0
        assert trial['oracle_s'] is not None and trial['oracle_s'] >= 0.0
        # The fiducial node keeps a subset of what the camera reports: never an earlier fix.
        assert trial['oracle_fix_s'] is None or trial['oracle_fix_s'] >= trial['oracle_s']
        assert trial['time_to_lost'] is not None, 'lost_service never declared LOST'
    assert set(result['summary']) == {'spiral', 'reactive', 'none'}


def test_compute_quick(tmp_path):
    code, output = run_suite('compute', tmp_path)
    assert code == 0, output[-3000:]
    result = check_common(tmp_path, 'compute', output)
    assert result['trials'] and result['summary']


def test_real_logs_quick_runs_or_skips_with_a_reason(tmp_path):
    code, output = run_suite('real-logs', tmp_path)
    assert code == 0, output[-3000:]
    result = check_common(tmp_path, 'real-logs', output)
    if result.get('skipped'):
        assert 'shared' in result['skipped'] or 'not found' in result['skipped']
        pytest.skip(result['skipped'])
    assert result['trials']
