"""tools/wander_trials.py: the recovery core's reactive search alone in the simulator.

Smoke tests of the harness: in this simple room stamped and unstamped scans give the same run;
what placing a scan at its stamp does is tested on the core in test_recovery.py.
"""
import math

import numpy as np
import pytest

from lost_and_found.core.config import ConfigError

from lost_and_found.sim.gridmap import GridMap, save_map
from tool_loader import load_tool


def room(tmp_path, pillar=True):
    """A 6 m x 6 m room (0.05 m cells) with a 1 m pillar in its middle, saved as a map."""
    occupied = np.zeros((120, 120), dtype=bool)
    occupied[:2, :] = occupied[-2:, :] = occupied[:, :2] = occupied[:, -2:] = True
    occupied[50:70, 50:70] = pillar
    path = str(tmp_path / ('room.yaml' if pillar else 'open_room.yaml'))
    save_map(GridMap.from_occupancy(occupied, 0.05), path)
    return path


def test_the_search_wanders_the_room_without_touching_a_wall(tmp_path):
    tool = load_tool('wander_trials')
    path = room(tmp_path)
    grid = tool.load_map(path)
    result = tool.run_trial(grid, path, seed=4, seconds=40.0, delay=0.2, unstamped=False)
    assert grid.is_free(result.start[0], result.start[1])
    # 40 s: a 5 s spin, then the wander at up to 0.3 m/s with a look-around every 3 m.
    assert 2.0 < result.driven < 7.0
    assert result.collisions == []
    assert result.first_tag is None                 # no tags asked for
    assert 3 <= result.cells <= 36                  # the room is 6 x 6 cells of 1 m
    assert result.unknown_s == 0.0                  # the room is all mapped


def test_time_in_unknown_map_space_is_counted(tmp_path):
    tool = load_tool('wander_trials')
    # The room, its east half never seen by the mapper (unknown, no wall drawn).
    occupied = np.zeros((120, 120), dtype=bool)
    occupied[:2, :] = occupied[-2:, :] = occupied[:, :2] = True
    free = np.zeros_like(occupied)
    free[:, :60] = True
    path = str(tmp_path / 'half.yaml')
    save_map(GridMap(occupied, free, 0.05), path)
    grid = tool.load_map(path)
    # Put down in the mapped half facing east: after the first spin the wander heads into the
    # open unknown half (its widest gap) and stays there.
    result = tool.run_trial(grid, path, seed=4, seconds=20.0, delay=0.0, unstamped=False,
                            start=(2.5, 3.0, 0.0))
    assert result.unknown_s > 5.0
    # Only the spin (5 s): it stays in the mapped half.
    assert tool.run_trial(grid, path, seed=4, seconds=4.0, delay=0.0, unstamped=False,
                          start=(2.5, 3.0, 0.0)).unknown_s == 0.0


def tag_file(tmp_path, x, y, facing):
    """A fiducial map of one tag at (x, y), 0.3 m up, its face turned to yaw ``facing``."""
    path = tmp_path / 'tags.yaml'
    path.write_text('fiducials:\n  - {id: 7, position: [%r, %r, 0.3], facing_yaw: %r}\n'
                    % (x, y, facing))
    return str(path)


def test_a_tag_in_view_from_the_start_is_seen_at_once_and_one_behind_a_wall_never(tmp_path):
    tool = load_tool('wander_trials')
    path = room(tmp_path)
    grid = tool.load_map(path)
    # On the room's west wall, facing east, and the robot 1.5 m in front of it looking at it.
    west = tool.TagView(grid, tag_file(tmp_path, 0.12, 1.5, 0.0))
    assert west.sees((1.6, 1.5, math.pi))
    assert not west.sees((1.6, 1.5, 0.0))           # looking away
    result = tool.run_trial(grid, path, seed=4, seconds=2.0, delay=0.0, unstamped=False,
                            start=(1.6, 1.5, math.pi), tags=west)
    assert result.first_tag == 0.0
    # A tag 2.7 m ahead, facing the robot: seen in the open room, hidden by the pillar.
    behind = tag_file(tmp_path, 3.9, 3.0, math.pi)
    assert tool.TagView(tool.load_map(room(tmp_path, pillar=False)), behind).sees(
        (1.2, 3.0, 0.0))
    assert not tool.TagView(grid, behind).sees((1.2, 3.0, 0.0))


def test_parameters_are_set_by_name_and_bad_ones_are_refused():
    tool = load_tool('wander_trials')
    overrides = tool.parse_overrides(['look_around_every=2', 'explore=false'])
    config = tool.recovery_config(60.0, overrides)
    assert config.look_around_every == 2.0 and config.explore is False
    assert config.strategy == 'reactive' and config.max_search_time == 120.0
    for bad in (['look_around_every'], ['=3'], ['explore=[']):
        with pytest.raises(ValueError):
            tool.parse_overrides(bad)
    with pytest.raises(ConfigError):
        tool.recovery_config(60.0, {'look_around_evry': 2.0})
    with pytest.raises(ConfigError):
        tool.recovery_config(60.0, {'look_around_every': -1.0})
    with pytest.raises(ConfigError, match='strategy'):
        tool.recovery_config(60.0, {'strategy': 'spiral'})


def test_the_summary_counts_unseen_trials_as_later_than_every_budget():
    tool = load_tool('wander_trials')
    line = tool.sight_summary([0.0, 20.0, None, 100.0])
    assert line == ('a kept tag in view: 2/4 within 30 s, 2/4 within 60 s, 3/4 within 120 s; '
                    'median 60.0 s')
    assert tool.sight_summary([None, 5.0, None]).endswith('median never')
    # A trial longer than 120 s adds its length to the budgets (main()); each counted once.
    assert tool.sight_summary([10.0, 150.0, None], (30.0, 60.0, 120.0, 165.0, 60.0)) == (
        'a kept tag in view: 1/3 within 30 s, 1/3 within 60 s, 1/3 within 120 s, '
        '2/3 within 165 s; median 150.0 s')


def test_bad_arguments_and_maps_exit_1(tmp_path, capsys):
    tool = load_tool('wander_trials')
    assert tool.main([str(tmp_path / 'missing.yaml')]) == 1
    assert tool.main([room(tmp_path), '--trials', '0']) == 1
    assert tool.main([room(tmp_path), '--delay', '-1']) == 1
    assert tool.main([room(tmp_path), '--start', '1,x']) == 1
    assert tool.main([room(tmp_path), '--start', '3.0,3.0']) == 1     # inside the pillar
    assert tool.main([room(tmp_path), '--set', 'explore']) == 1
    assert tool.main([room(tmp_path), '--set', 'spin_speed=-1']) == 1
    assert tool.main([room(tmp_path), '--fiducials', str(tmp_path / 'none.yaml')]) == 1
    assert 'wander_trials' in capsys.readouterr().err


def test_main_prints_every_trial_and_the_total(tmp_path, capsys):
    tool = load_tool('wander_trials')
    assert tool.main([room(tmp_path), '--trials', '2', '--seconds', '8', '--seed', '1']) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(' from ')[0] for line in out[:2]] == ['trial 0', 'trial 1']
    assert out[-3].startswith('0 collision(s) in 2 trials of 8 s')
    assert out[-3].endswith('(delay 0.00 s, scans stamped)')
    assert out[-2].startswith('cells crossed per trial: median ')
    assert out[-1] == ('in unknown map space before a kept tag in view (or the end): 0 trials '
                       '10 s or more, 0 s in all')
    tags = tag_file(tmp_path, 0.12, 1.5, 0.0)
    assert tool.main([room(tmp_path), '--trials', '2', '--seconds', '8', '--start', '1.6,1.5',
                      '--fiducials', tags, '--set', 'explore=false']) == 0
    out = capsys.readouterr().out.splitlines()
    # Trial 0 faces east, away from the tag: the first spin turns it toward the tag.
    assert 'a kept tag in view at ' in out[0] and 'a kept tag in view at 0.0 s' in out[1]
    assert out[-1].startswith('a kept tag in view: 2/2 within 30 s, 2/2 within 60 s, 2/2 '
                              'within 120 s; median ')
    # Trial 1 saw it at once, trial 0 within its first spin (5 s).
    assert 0.0 < float(out[-1].rsplit('median ', 1)[1].rstrip(' s')) < 2.6
    assert tool.main([room(tmp_path), '--trials', '4', '--seconds', '1', '--start', '1,1']) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(': drove')[0] for line in out[:4]] == [
        'trial 0 from (1.00, 1.00, 0.00)', 'trial 1 from (1.00, 1.00, 1.57)',
        'trial 2 from (1.00, 1.00, 3.14)', 'trial 3 from (1.00, 1.00, 4.71)']
