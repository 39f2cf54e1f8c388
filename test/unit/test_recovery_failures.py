"""tools/recovery_failures.py: failed trials and collisions of a recovery run, from its files."""
import json

from recovery_run_files import write_run
from tool_loader import load_tool


def _tool():
    return load_tool('recovery_failures')


def trial(strategy, index, put_down, trace, resumed=False, need_help=False):
    return {'strategy': strategy, 'index': index, 't_put_down_sim': put_down,
            'resumed': resumed, 'recovered': resumed, 'need_help': need_help, 'trace': trace}


def test_failed_trials_false_localizations_and_collisions_are_found(tmp_path):
    tool = _tool()
    searching = [[1.0, 0, 0, 0, 5.0, 1.0, 'LOST'], [2.0, 0, 0, 0, 5.0, 1.0, 'LOCALIZING'],
                 [3.0, 0, 0, 0, 6.2, 1.0, 'IDLE'], [4.0, 0, 0, 0, 6.2, 1.0, 'NAVIGATING']]
    right = [[1.0, 0, 0, 0, 3.0, 1.0, 'LOST'], [2.0, 0, 0, 0, 0.1, 0.0, 'IDLE']]
    run = {'trials': [trial('spiral', 0, 100.0, right, resumed=True),
                      trial('spiral', 1, 200.0, searching),
                      trial('reactive', 0, 300.0, [[1.0, 0, 0, 0, 4.0, 1.0, 'NEED_HELP']],
                            need_help=True),
                      trial('none', 0, 400.0, [], need_help=True)]}
    (tmp_path / 'recovery.json').write_text(json.dumps(run))
    log = tmp_path / 'logs' / 'recovery' / 'recovery' / 'ros' / 'x'
    log.mkdir(parents=True)
    (log / 'rosout.log').write_text(
        '201.5 WARN /sim_world [sim_world.py:1(f)] [topics: /a] /sim_world: collision (1 so far)\n'
        '201.5 WARN /sim_world [sim_world.py:1(f)] [topics: /a] /sim_world: collision (1 so far)\n'
        '250.0 INFO /sim_world [sim_world.py:1(f)] [topics: /a] /sim_world: teleported\n')
    text = '\n'.join(tool.report(str(tmp_path)))
    assert '| `spiral` | 1 | not recovered | 3: 6.2 |' in text
    assert '| `reactive` | 0 | NEED_HELP | - |' in text
    assert '`spiral` | 0 |' not in text.split('collision')[0]       # it resumed its goal
    assert '1 of 1 trials not resumed, 1 of them asked for help' in text
    # One collision (logged twice: once per log file copy), in spiral trial 1, 1.5 s after the
    # put-down, while it still searched with the estimate 5 m off.
    assert text.count('| 201.5 |') == 1
    assert '| 201.5 | `spiral` | 1 | 2 | LOST | 5.00 |' in text


def test_declarations_looks_and_refutations_are_counted_and_judged(tmp_path):
    tool = _tool()
    # Declared twice: wrongly at 3 s (6.2 m off), rightly at 8 s; a look at 4 s; the tag check
    # refuted the wrong one at 5 s and a right one (0.1 m off) at 9 s.
    trace = [[1.0, 0, 0, 0, 5.0, 1.0, 'LOST'], [3.0, 0, 0, 0, 6.2, 1.0, 'IDLE'],
             [5.0, 0, 0, 0, 6.2, 1.0, 'IDLE'], [6.0, 0, 0, 0, 6.2, 1.0, 'LOST'],
             [8.0, 0, 0, 0, 0.1, 0.0, 'IDLE'], [9.0, 0, 0, 0, 0.1, 0.0, 'IDLE']]
    run = {'trials': [trial('spiral', 0, 100.0, trace, resumed=True),
                      trial('reactive', 0, 300.0, [[1.0, 0, 0, 0, 0.1, 0.0, 'IDLE']],
                            resumed=True)]}
    (tmp_path / 'recovery.json').write_text(json.dumps(run))
    log = tmp_path / 'logs' / 'recovery' / 'x'
    log.mkdir(parents=True)
    (log / 'rosout.log').write_text(
        '104.0 INFO /lost_and_found [r.py:1(f)] [topics: /a] recovery: going to look from '
        '(1.00, 2.00, 0.00): tag 3\n'
        '105.0 WARN /fiducial_localizer [f.py:1(f)] [topics: /a] /fiducial_localizer: tag 3 '
        'should be in view 2.0 m away, 1 deg off the camera axis, but was not detected for 1.6 '
        's: the localization is wrong\n'
        '109.0 WARN /fiducial_localizer [f.py:1(f)] [topics: /a] /fiducial_localizer: tag 4 '
        'should be in view 2.0 m away, 1 deg off the camera axis, but was not detected for 1.6 '
        's: the localization is wrong\n'
        # The resumed goal aborted on the wrong estimate (taken as wrong) and on the right one
        # (retried); and on the reactive trial's right estimate, wrongly taken as wrong.
        '105.5 WARN /lost_and_found [r.py:1(f)] [topics: /a] recovery: move_base aborted the '
        'resumed goal (1.00, 2.00) after the localizer alone ended LOST, no tag confirming it: '
        'taking the estimate as wrong, asking for LOST (doubt 1 of 2; the goal stays saved)\n'
        '108.5 WARN /lost_and_found [r.py:1(f)] [topics: /a] recovery: move_base aborted the '
        'resumed goal (1.00, 2.00); trying again in 5 s (2 attempts left)\n'
        '301.0 WARN /lost_and_found [r.py:1(f)] [topics: /a] recovery: move_base aborted the '
        'resumed goal (1.00, 2.00) after the localizer alone ended LOST, no tag confirming it: '
        'taking the estimate as wrong, asking for LOST (doubt 1 of 2; the goal stays saved)\n'
        # lost_service's probation refuted the wrong estimate, and the reactive trial's right one.
        '105.2 INFO /lost_service [l.py:1(f)] [topics: /a] state NAVIGATING -> LOST: the lost '
        'detector read confused for 4.0 s, 1.2 s after a localization on amcl\'s poses alone: '
        'taking the estimate as wrong\n'
        '301.0 INFO /lost_service [l.py:1(f)] [topics: /a] state IDLE -> LOST: the lost '
        'detector read lost for 4.1 s, 0.0 s after a localization on amcl\'s poses alone: '
        'taking the estimate as wrong\n'
        # The resumed goal stood still on the wrong estimate (taken as wrong): not an abort.
        '105.7 WARN /lost_and_found [r.py:1(f)] [topics: /a] recovery: the resumed goal (1.00, '
        '2.00) has not moved the robot 0.30 m in 15 s after the localizer alone ended LOST, no '
        'tag confirming it: taking the estimate as wrong, asking for LOST (doubt 1 of 2; the '
        'goal stays saved)\n')
    text = '\n'.join(tool.report(str(tmp_path)))
    assert '| `spiral` | 2 | 1 | 1 | 1 | 1 | 1 | 1 | 1 | 0 | 1 | 0 | 1 | 0 |' in text
    assert '| `reactive` | 0 | 0 | 0 | 0 | 0 | 0 | 1 | 0 | 1 | 0 | 1 | 0 | 0 |' in text


def test_a_collision_late_in_a_trial_is_not_given_to_the_next_one():
    tool = _tool()
    long_search = [[0.0, 0, 0, 0, 9.0, 1.0, 'LOST'], [150.0, 0, 0, 0, 9.0, 1.0, 'LOST']]
    trials = [trial('spiral', 7, 1000.0, long_search),
              trial('spiral', 8, 1200.0, [[0.0, 0, 0, 0, 3.0, 1.0, 'LOST']])]
    # 140 s into trial 7's search and 60 s before trial 8's put-down: trial 7's
    assert tool.owner(trials, 1140.0)['index'] == 7
    # after trial 7's trace ended, within 60 s of trial 8's put-down: trial 8's drive
    assert tool.owner(trials, 1170.0)['index'] == 8
    # before any trial's drive
    assert tool.owner(trials, 100.0) is None


def test_approaches_are_counted_by_how_they_ended(tmp_path):
    tool = _tool()
    # Spiral trial 0 (put down at 100): an approach at 104 ended by the localization at 108;
    # one at 120 blocked at 125 (the state leaves LOST only at 140); one at 150 whose trial
    # record ends at 160 while still LOST. Reactive trial 0 (put down at 300): an approach
    # that faced its tag (no fix), one that timed out, and one the budget ended (NEED_HELP
    # at 370, not a localization).
    spiral = [[1.0, 0, 0, 0, 5.0, 1.0, 'LOST'], [8.0, 0, 0, 0, 0.1, 0.0, 'LOCALIZING'],
              [10.0, 0, 0, 0, 4.0, 1.0, 'LOST'], [40.0, 0, 0, 0, 0.1, 0.0, 'IDLE'],
              [45.0, 0, 0, 0, 3.0, 1.0, 'LOST'], [60.0, 0, 0, 0, 3.0, 1.0, 'LOST']]
    reactive = [[1.0, 0, 0, 0, 5.0, 1.0, 'LOST'], [70.0, 0, 0, 0, 5.0, 1.0, 'NEED_HELP'],
                [80.0, 0, 0, 0, 5.0, 1.0, 'NEED_HELP']]
    write_run(tmp_path, [trial('spiral', 0, 100.0, spiral, resumed=True),
                         trial('reactive', 0, 300.0, reactive, need_help=True)], [
        (104.0, 'tag 3 seen 3.4 m away, too far, oblique or noisy to localize from: ...'),
        (120.0, 'tag 4 seen 3.1 m away, too far, oblique or noisy to localize from: ...'),
        (125.0, 'approach of tag 4 over: blocked; searching on'),
        (150.0, 'tag 5 seen 3.9 m away, too far, oblique or noisy to localize from: ...'),
        (310.0, 'tag 6 seen 3.2 m away, too far, oblique or noisy to localize from: ...'),
        (322.0, 'approach of tag 6 over: faced the tag for 1.0 s; searching on'),
        (330.0, 'tag 7 seen 3.2 m away, too far, oblique or noisy to localize from: ...'),
        (360.0, 'approach of tag 7 over: timed out; searching on'),
        (365.0, 'tag 8 seen 3.5 m away, too far, oblique or noisy to localize from: ...')])
    text = '\n'.join(tool.report(str(tmp_path)))
    assert '| `spiral` | 3 | 1 | 0 | 1 | 0 | 1 |' in text
    assert '| `reactive` | 3 | 0 | 1 | 0 | 1 | 1 |' in text
