"""tools/resume_stalls.py: would the stall check have doubted each localization on amcl alone."""
from recovery_run_files import write_run
from tool_loader import load_tool


def _tool():
    return load_tool('resume_stalls')


def samples(start, end, error, state, speed=0.0, x0=0.0):
    """Trace samples once a second from ``start`` to ``end`` (s after the put-down): the truth
    moving along x at ``speed`` from ``x0``, the estimate ``error`` m off."""
    return [[float(t), x0 + speed * (t - start), 0.0, 0.0, error, 0.1, state]
            for t in range(start, end + 1)]


def trial(index, states, trace, resumed=True):
    return {'strategy': 'spiral', 'index': index, 't_put_down_sim': 100.0 * (index + 1),
            'resumed': resumed, 'recovered': resumed, 'states': states, 'trace': trace}


def test_stall_time_needs_a_whole_window_within_the_distance():
    tool = _tool()
    moving = [(float(t), 0.1 * t, 0.0) for t in range(40)]
    assert tool.stall_time(moving, 15.0, 0.3) is None
    # Moving, then standing from 10 s on: fires 15 s after it stopped.
    stops = [(float(t), 0.5 * min(t, 10), 0.0) for t in range(40)]
    assert tool.stall_time(stops, 15.0, 0.3) == 25.0
    # Standing, but the record ends before a window is covered.
    assert tool.stall_time(stops[:20], 15.0, 0.3) is None


def test_localizations_are_judged_and_the_check_fires_on_the_stuck_wrong_one(tmp_path):
    tool = _tool()
    # Trial 0: localized wrongly (20 m off) at 30 s, drives 10 s, then stands until the
    # detector's LOST at 80 s: the check fires at 55 s, 25 s sooner.
    stuck = trial(0, [[0.0, 'LOST'], [30.0, 'IDLE'], [30.5, 'NAVIGATING'], [80.0, 'LOST']],
                  samples(0, 29, 20.0, 'LOST') + samples(30, 39, 20.0, 'NAVIGATING', 0.3)
                  + samples(40, 79, 20.0, 'NAVIGATING', x0=3.0)
                  + samples(80, 90, 20.0, 'LOST', x0=3.0), resumed=False)
    # Trial 1: localized rightly at 10 s, drives the whole way: no check fires. Then a fix
    # (LOCALIZING) is not a localization on amcl alone.
    right = trial(1, [[0.0, 'LOST'], [10.0, 'NAVIGATING'], [50.0, 'LOST'],
                      [60.0, 'LOCALIZING'], [61.0, 'IDLE']],
                  samples(0, 9, 8.0, 'LOST') + samples(10, 49, 0.1, 'NAVIGATING', 0.3)
                  + samples(50, 59, 8.0, 'LOST') + samples(60, 90, 0.1, 'IDLE'))
    # Trial 2: wrong, stands still, but a tag corrects it after 8 s: the watch ends there.
    corrected = trial(2, [[0.0, 'LOST'], [5.0, 'NAVIGATING']],
                      samples(0, 4, 9.0, 'LOST') + samples(5, 12, 9.0, 'NAVIGATING')
                      + samples(13, 60, 0.05, 'NAVIGATING'))
    write_run(tmp_path, [stuck, right, corrected], [])
    assert tool.localizations(stuck, 15.0, 0.3) == [(30.0, 20.0, 55.0, 80.0)]
    text = '\n'.join(tool.report([str(tmp_path)], 15.0, 0.3, listing=True))
    assert '| right | 1 | 0 |' in text
    assert '| wrong | 2 | 1 |' in text
    assert '1, median 25.0 s sooner (25.0-25.0)' in text
    assert '| `spiral` 0 | 30.0 | 20.0 | 55.0 | 80.0 | no |' in text
    assert '| `spiral` 2 | 5.0 | 9.0 | - | - | yes |' in text
