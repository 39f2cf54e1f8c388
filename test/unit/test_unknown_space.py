"""tools/unknown_space.py: how long each recovery trial's search spent in unknown map space."""
import json

import numpy as np
import pytest

from lost_and_found.sim.gridmap import GridMap, load_map, save_map
from tool_loader import load_tool


def _tool():
    return load_tool('unknown_space')


def half_unknown_map(path):
    """A 10 m x 4 m map (0.1 m cells, origin 0): free for x < 5, unknown for x >= 5."""
    occupied = np.zeros((40, 100), dtype=bool)
    free = np.zeros_like(occupied)
    free[:, :50] = True
    save_map(GridMap(occupied, free, 0.1), str(path))
    return str(path)


def trace(start, end, x_of_t):
    """Samples once a second from ``start`` to ``end`` (s after the put-down)."""
    return [[float(t), x_of_t(t), 2.0, 0.0, 0.1, 0.1, 'LOST'] for t in range(start, end + 1)]


def test_unknown_seconds_counts_each_sample_until_the_next():
    tool = _tool()
    samples = [[0.0, 1.0, 0.0], [1.0, 6.0, 0.0], [3.0, 6.0, 0.0], [4.0, 1.0, 0.0]]

    def unknown_at(xs, _ys):
        return [x > 5.0 for x in xs]

    assert tool.unknown_seconds(samples, 10.0, unknown_at) == pytest.approx(3.0)
    assert tool.unknown_seconds(samples, 2.0, unknown_at) == pytest.approx(1.0)   # cut at 2 s
    assert tool.unknown_seconds([], 10.0, unknown_at) == 0.0
    # Samples before the put-down do not count; the last counts until the end.
    assert tool.unknown_seconds([[-3.0, 6.0, 0.0], [8.0, 6.0, 0.0]], 10.0,
                                unknown_at) == pytest.approx(2.0)


def test_trials_are_counted_by_outcome_and_time_in_unknown_space(tmp_path, capsys):
    tool = _tool()
    map_path = half_unknown_map(tmp_path / 'half.yaml')
    trials = [
        # Resumed, recovered at 20 s having stayed in the known half.
        {'strategy': 'spiral', 'index': 0, 'recovered': True, 'resumed': True,
         'time_to_recover': 20.0, 'trace': trace(0, 60, lambda t: 1.0)},
        # Not resumed: wandered into the unknown half at 30 s and stayed to the end (180 s).
        {'strategy': 'spiral', 'index': 1, 'recovered': False, 'resumed': False,
         'time_to_recover': None, 'trace': trace(0, 180, lambda t: 1.0 if t < 30 else 8.0)},
        # Not resumed, 5 s in the unknown half only.
        {'strategy': 'spiral', 'index': 2, 'recovered': False, 'resumed': False,
         'time_to_recover': None,
         'trace': trace(0, 180, lambda t: 8.0 if 40 <= t < 45 else 1.0)},
        # Resumed, but only after 50 s in the unknown half, which ended at recovery (60 s).
        {'strategy': 'spiral', 'index': 3, 'recovered': True, 'resumed': True,
         'time_to_recover': 60.0, 'trace': trace(0, 90, lambda t: 8.0 if 10 <= t else 1.0)},
    ]
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'recovery.json').write_text(json.dumps({'map': map_path, 'trials': trials}))
    rows = tool.trial_rows(json.loads((run / 'recovery.json').read_text()), load_map(map_path))
    seconds = {index: s for _strategy, index, _resumed, s in rows}
    assert seconds[0] == 0.0
    assert seconds[1] == pytest.approx(150.0)
    assert seconds[2] == pytest.approx(5.0)
    assert seconds[3] == pytest.approx(50.0)
    assert tool.main([str(run), '--list']) == 0
    out = capsys.readouterr().out
    assert '| %s | `spiral` | 2 | 1 | 2 | 1 |' % run in out
    assert '| %s | spiral | 1 | 150 |' % run in out


def test_a_map_that_cannot_be_loaded_is_named(tmp_path):
    tool = _tool()
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'recovery.json').write_text(json.dumps({'map': str(tmp_path / 'gone.yaml'),
                                                   'trials': []}))
    with pytest.raises(SystemExit) as error:
        tool.main([str(run)])
    assert 'gone.yaml' in str(error.value) and 'give --map' in str(error.value)
