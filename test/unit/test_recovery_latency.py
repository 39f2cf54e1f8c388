"""tools/recovery_latency.py: a recovery's time split at the first fix, from a run's files."""
import json

from tool_loader import load_tool


def trial(strategy, recovered, recover, states, fix_bound=0.5):
    return {'strategy': strategy, 'recovered': recovered, 'time_to_recover': recover,
            'states': states, 'oracle_fix_s': fix_bound}


def test_time_to_recover_is_split_at_the_first_fix(tmp_path):
    tool = load_tool('recovery_latency')
    fixed = [[-2.8, 'FLYING'], [0.0, 'LOST'], [1.5, 'LOCALIZING'], [4.0, 'IDLE']]
    late_fix = [[0.0, 'LOST'], [1.0, 'IDLE'], [3.0, 'LOST'], [6.0, 'LOCALIZING']]
    run = {'trials': [trial('spiral', True, 2.0, fixed),
                      trial('spiral', True, 3.5, [[0.0, 'LOST'], [0.5, 'LOCALIZING']], 0.1),
                      trial('spiral', True, 1.2, late_fix),     # the estimate was right first
                      trial('spiral', False, None, fixed),      # not recovered: not counted
                      trial('reactive', True, 9.0, [[0.0, 'LOST'], [8.0, 'IDLE']])]}
    (tmp_path / 'recovery.json').write_text(json.dumps(run))
    log = tmp_path / 'logs' / 'recovery' / 'x'
    log.mkdir(parents=True)
    line = ('12.5 INFO /lost_service [l.py:1(f)] [topics: /a] sent the fix from '
            '/fiducial_localizer again, so that amcl applies it after our re-seed\n')
    (log / 'rosout.log').write_text(line + line)   # one line in two copies of the log
    text = tool.report([str(tmp_path)])
    row = text.splitlines()[2]
    # first fixes 1.5 and 0.5 s, bounds 0.5 and 0.1, then 0.5 and 3.0 s; the bench tables'
    # percentiles (linear: p90 of 0.5 and 1.5 is 1.4)
    assert row.endswith('| `spiral` | 3 | 2 | 1.0 / 1.4 | 0.3 / 0.5 | 1.8 / 2.8 | 1: 1.2 | 1 |')
    assert text.splitlines()[3] == '|  | `reactive` | 1 | 0 | - | - | - | 1: 9.0 |  |'
