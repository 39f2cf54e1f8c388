"""tools/remeasure_scan.py: the scan feature of a recorded run measured again from its truth."""
import json
import math

import numpy as np
import pytest
from tool_loader import load_tool

from lost_and_found.bench import detection, detectors
from lost_and_found.sim.gridmap import GridMap, save_map

remeasure = load_tool('remeasure_scan')

RES = 0.05


def corridor():
    """A corridor 6 m long and 2 m wide: walls along both sides and across its east end, its
    west end open to the grid's edge."""
    occupied = np.zeros((40, 120), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, -1] = True
    return GridMap.from_occupancy(occupied, RES)


def write_run(folder, readings, truth, map_path, unmapped_ends=None):
    folder.mkdir()
    (folder / 'detection.json').write_text(json.dumps({'map': map_path}))
    (folder / 'detection_truth.json').write_text(json.dumps(
        {'fields': ['t', 'x', 'y', 'yaw'], 'truth': truth}))
    fields = ['t', 'x', 'y', 'yaw', 'var_x', 'var_y', 'cov_xy', 'var_yaw', 'error_xy',
              'error_yaw', 'phase', 'scan_miss', 'scan_through', 'scan_short']
    check = {'hit_tolerance': 0.2, 'short_weight': 0.75, 'min_range': 0.0,
             'open_beams': False, 'max_beams': 60, 'min_beams': 10}
    if unmapped_ends is not None:       # streams before the rule do not name it
        check['unmapped_ends'] = unmapped_ends
    (folder / 'detection_stream.json').write_text(json.dumps({
        'fields': fields, 'readings': readings, 'scan_check': check}))
    return str(folder)


def test_a_run_looking_off_the_map_is_through_as_shipped_and_left_out_with_unmapped_ends(
        tmp_path, capsys):
    save_map(corridor(), str(tmp_path / 'corridor.yaml'))
    # At t 1 the robot is where amcl says, 3 m from the open west end, looking down it (the
    # laser ends at the grid's edge); at t 2 it is in the middle facing the east wall 2 m
    # away, but amcl puts it 1.5 m further west.
    truth = [[1.0, 3.0, 1.0, math.pi], [2.0, 4.0, 1.0, 0.0]]
    row = [0.01, 0.01, 0.0, 0.01, 0.0, 0.0, 'normal', 0.0, 0.0, 0.0]
    readings = [[1.0, 3.0, 1.0, math.pi] + row, [2.0, 2.5, 1.0, 0.0] + row]
    run = write_run(tmp_path / 'run', readings, truth, 'corridor.yaml')
    grid = corridor()
    laser = remeasure.laser_config(remeasure.os.path.join(
        remeasure.HERE, '..', 'config', 'sim_world.yaml'))
    stream, truth_, map_path, world = remeasure.run_inputs(run, str(tmp_path))
    assert map_path == world == str(tmp_path / 'corridor.yaml')
    rows = remeasure.remeasure(stream, remeasure.laser_scans(stream, truth_, grid, laser),
                               detectors.detector_map(grid), laser)
    (right_error, _, right, rule), (wrong_error, _, wrong, _) = rows
    assert rule == 0                            # recorded as shipped
    assert right_error[0] == pytest.approx(0.0) and wrong_error[0] == pytest.approx(1.5)
    # Right pose: as shipped, the beams that end at the edge (over half; the others hit the
    # side walls) are misses, through or short as the noise puts them just off or on the
    # map; with unmapped_ends they are left out and the hits alone remain.
    assert right[0][0] > 0.1 and right[0][0] + right[0][1] > 0.5 and right[1] == (0.0, 0.0)
    # Wrong pose: the beams that reached the east wall end 1.5 m short of it, in free space
    # far from the map's edge: short misses under either rule (those at the sides hit).
    assert wrong[0] == wrong[1] and wrong[0][1] > 0.7
    summary = remeasure.summarize(rows, (0.25,), 0.2)
    assert summary['readings'] == 2 and summary['right']['count'] == 1
    assert summary['reproduced'] == 0.5         # the recorded 0.0 is off by over 0.05 once
    assert remeasure.main([run, '--map-root', str(tmp_path)]) == 0
    assert '| %s | 2 | 50.0 %% | 1 |' % run in capsys.readouterr().out
    # --write: a copy whose scan columns are measured again, with the rule or as shipped.
    for rule, out in (('unmapped_ends', 'with'), ('shipped', 'without')):
        assert remeasure.main([run, '--map-root', str(tmp_path), '--write',
                               str(tmp_path / out), '--write-rule', rule]) == 0
    written = {}
    for out in ('with', 'without'):
        stream = json.loads((tmp_path / out / 'run' / 'detection_stream.json').read_text())
        assert stream['fields'] == list(detection.STREAM_FIELDS)
        assert stream['scan_check']['unmapped_ends'] == (out == 'with')
        assert (tmp_path / out / 'run' / 'detection_truth.json').exists()
        written[out] = [dict(zip(stream['fields'], r)) for r in stream['readings']]
    assert written['with'][0]['scan_through'] == 0.0 and written['with'][0]['scan_short'] == 0.0
    assert written['without'][0]['scan_through'] == pytest.approx(right[0][0])
    assert written['with'][1]['scan_short'] == written['without'][1]['scan_short'] == \
        pytest.approx(wrong[0][1])
    # Every column the suite records: the misses at every min_range, the spans.
    assert len(written['with'][0]['scan_near']) == len(detectors.MIN_RANGES)
    assert written['with'][0]['scan_spans'] is not None
    # It does not write over the run itself.
    assert remeasure.main([run, '--map-root', str(tmp_path), '--write', str(tmp_path)]) == 1
    assert 'would overwrite' in capsys.readouterr().err


def test_a_run_recorded_with_unmapped_ends_is_reproduced_under_that_rule(tmp_path):
    save_map(corridor(), str(tmp_path / 'corridor.yaml'))
    # The robot where amcl says, looking down the corridor to the grid's open west end: the
    # run recorded 0 through (the rule leaves every beam ending there out); as shipped the
    # same scan is over 0.1 through.
    truth = [[1.0, 3.0, 1.0, math.pi]]
    readings = [[1.0, 3.0, 1.0, math.pi, 0.01, 0.01, 0.0, 0.01, 0.0, 0.0, 'normal',
                 0.0, 0.0, 0.0]]
    grid = corridor()
    laser = remeasure.laser_config(remeasure.os.path.join(
        remeasure.HERE, '..', 'config', 'sim_world.yaml'))
    for recorded, reproduced in ((True, 1.0), (False, 0.0)):
        run = write_run(tmp_path / str(recorded), readings, truth, 'corridor.yaml', recorded)
        stream, truth_, _map, _world = remeasure.run_inputs(run, str(tmp_path))
        rows = remeasure.remeasure(stream, remeasure.laser_scans(stream, truth_, grid, laser),
                                   detectors.detector_map(grid), laser)
        assert rows[0][3] == int(recorded) and rows[0][2][0][0] > 0.1
        assert remeasure.summarize(rows, (0.25,), 0.2)['reproduced'] == reproduced


def test_bad_input_is_named(tmp_path, capsys):
    assert remeasure.main([str(tmp_path / 'absent')]) == 1
    assert 'detection.json: cannot read' in capsys.readouterr().err
    (tmp_path / 'sim.yaml').write_text('laser: {beams: 1}\n')
    with pytest.raises(ValueError, match='sim.yaml: no usable laser group'):
        remeasure.laser_config(str(tmp_path / 'sim.yaml'))


def test_a_reading_counts_as_scanned_when_any_scan_column_holds_a_value():
    column = {'t': 0, 'scan_through': 1, 'scan_open': 2, 'scan_spans': 3}
    assert remeasure.had_scan([1.0, 0.1, None, None], column)
    # Too few beams of its own, but enough with the open beams: measured again all the same.
    assert remeasure.had_scan([1.0, None, [None, [0.2, 0.1]], None], column)
    assert not remeasure.had_scan([1.0, None, [None, None], [None, None]], column)


def test_a_run_with_its_own_laser_settings_is_cast_with_them(tmp_path):
    laser = remeasure.laser_config(remeasure.os.path.join(
        remeasure.HERE, '..', 'config', 'sim_world.yaml'))
    run = tmp_path / 'run'
    assert remeasure.run_laser(str(run), laser) == laser        # no logs: the stock laser
    params = run / 'logs' / 'detection' / 'detection'
    params.mkdir(parents=True)
    (params / 'sim_params.yaml').write_text(
        'sim_world:\n  start_pose: [1, 2, 0]\n  laser: {no_return: nan}\n')
    assert remeasure.run_laser(str(run), laser).no_return == 'nan'
    (params / 'sim_params.yaml').write_text('sim_world:\n  laser: {no_return: maybe}\n')
    with pytest.raises(ValueError, match='sim_params.yaml: bad laser settings'):
        remeasure.run_laser(str(run), laser)
