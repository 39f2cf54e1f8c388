"""tools/recovery_latency.py: a recovery's time split at the first fix, from a run's files."""
import json

from tool_loader import load_tool


def trial(strategy, recovered, recover, states, fix_bound=0.5):
    return {'strategy': strategy, 'recovered': recovered, 'time_to_recover': recover,
            'states': states, 'oracle_fix_s': fix_bound, 't_put_down_sim': 0.0}


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


def test_trials_are_sorted_by_what_came_before_the_first_fix(tmp_path):
    tool = load_tool('recovery_latency')

    def put_down(strategy, at, fix, recover, oracle):
        return dict(trial(strategy, True, recover, [[0.0, 'LOST'], [fix, 'LOCALIZING']], 0.5),
                    t_put_down_sim=at, oracle_s=oracle, trace=[[0.0], [recover + 5.0]])
    # One turn at the default spin_speed is 5 s, so the first turn ends 6 s after the put-down.
    run = {'trials': [put_down('spiral', 100.0, 2.0, 2.5, 0.2),      # the turn alone
                      put_down('spiral', 200.0, 8.0, 8.7, 0.4),      # an approach at 3 s
                      put_down('spiral', 300.0, 20.0, 21.0, 1.0),    # a leg at 5.5 s
                      put_down('reactive', 400.0, 12.0, 12.8, 2.0),  # wandered, no line
                      put_down('reactive', 500.0, 9.0, 9.6, 3.0),    # an approach at 7 s
                      dict(put_down('spiral', 600.0, 1.0, 1.5, 0.1), recovered=False)]}
    (tmp_path / 'recovery.json').write_text(json.dumps(run))
    log = tmp_path / 'logs' / 'recovery' / 'x'
    log.mkdir(parents=True)
    head = ' INFO /lost_and_found [r.py:1(f)] [topics: /a] recovery: '
    (log / 'rosout.log').write_text(''.join('%s%s%s\n' % (t, head, text) for t, text in (
        (203.0, 'tag 4 seen 3.5 m away, too far, oblique or noisy to localize from: ...'),
        (305.5, 'spiral leg 1 to (1.00, 0.00) in odom, 10.0 s'),
        (507.0, 'tag 4 seen 3.5 m away, too far, oblique or noisy to localize from: ...'))))
    lines = tool.report([str(tmp_path)]).splitlines()
    table = lines[lines.index('| run | strategy | first fix after | trials | time to recover '
                              '(median s) | oracle bound (median s) | fix bound (median s) |'):]
    assert table[2].endswith('| `spiral` | the first turn | 1 | 2.5 | 0.2 | 0.5 |')
    assert table[3] == '|  | `spiral` | an approach | 1 | 8.7 | 0.4 | 0.5 |'
    assert table[4] == '|  | `spiral` | a search | 1 | 21.0 | 1.0 | 0.5 |'
    assert table[5] == '|  | `reactive` | the first turn | 0 | - | - | - |'
    assert table[7] == '|  | `reactive` | a search | 2 | 11.2 | 2.5 | 0.5 |'
