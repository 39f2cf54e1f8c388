"""tools/wander_trials.py: the recovery core's reactive search alone in the simulator.

Smoke tests of the harness: in this simple room stamped and unstamped scans give the same run;
what placing a scan at its stamp does is tested on the core in test_recovery.py.
"""
import numpy as np

from lost_and_found.sim.gridmap import GridMap, save_map
from tool_loader import load_tool


def room(tmp_path):
    """A 6 m x 6 m room (0.05 m cells) with a 1 m pillar in its middle, saved as a map."""
    occupied = np.zeros((120, 120), dtype=bool)
    occupied[:2, :] = occupied[-2:, :] = occupied[:, :2] = occupied[:, -2:] = True
    occupied[50:70, 50:70] = True
    path = str(tmp_path / 'room.yaml')
    save_map(GridMap.from_occupancy(occupied, 0.05), path)
    return path


def test_the_search_wanders_the_room_without_touching_a_wall(tmp_path):
    tool = load_tool('wander_trials')
    path = room(tmp_path)
    grid = tool.load_map(path)
    start, driven, collisions = tool.run_trial(grid, path, seed=4, seconds=40.0, delay=0.2,
                                               unstamped=False)
    assert grid.is_free(start[0], start[1])
    # 40 s: a 5 s spin, then the wander at up to 0.2 m/s with a look-around every 3 m.
    assert 2.0 < driven < 7.0
    assert collisions == []


def test_bad_arguments_and_maps_exit_1(tmp_path, capsys):
    tool = load_tool('wander_trials')
    assert tool.main([str(tmp_path / 'missing.yaml')]) == 1
    assert tool.main([room(tmp_path), '--trials', '0']) == 1
    assert tool.main([room(tmp_path), '--delay', '-1']) == 1
    assert tool.main([room(tmp_path), '--start', '1,x']) == 1
    assert tool.main([room(tmp_path), '--start', '3.0,3.0']) == 1     # inside the pillar
    assert 'wander_trials' in capsys.readouterr().err


def test_main_prints_every_trial_and_the_total(tmp_path, capsys):
    tool = load_tool('wander_trials')
    assert tool.main([room(tmp_path), '--trials', '2', '--seconds', '8', '--seed', '1']) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(' from ')[0] for line in out[:2]] == ['trial 0', 'trial 1']
    assert out[-1].startswith('0 collision(s) in 2 trials of 8 s')
    assert out[-1].endswith('(delay 0.00 s, scans stamped)')
    assert tool.main([room(tmp_path), '--trials', '4', '--seconds', '1', '--start', '1,1']) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(': drove')[0] for line in out[:4]] == [
        'trial 0 from (1.00, 1.00, 0.00)', 'trial 1 from (1.00, 1.00, 1.57)',
        'trial 2 from (1.00, 1.00, 3.14)', 'trial 3 from (1.00, 1.00, 4.71)']
