"""tools/paired_strategies.py: two strategies compared on the same kidnaps, trial by trial."""
import json

import pytest

from tool_loader import load_tool


def trial(strategy, index, resumed, recover=None, need_help=False, collisions=0):
    return {'strategy': strategy, 'index': index, 'resumed': resumed,
            'time_to_recover': recover, 'need_help': need_help, 'collisions': collisions}


def write_run(folder, trials):
    folder.mkdir()
    (folder / 'recovery.json').write_text(json.dumps({'trials': trials}))
    return str(folder)


def test_trials_pair_by_index_and_unpaired_ones_are_left_out():
    tool = load_tool('paired_strategies')
    trials = [trial('spiral', 0, True), trial('reactive', 1, False), trial('none', 0, False),
              trial('reactive', 0, False), trial('spiral', 2, True)]
    assert tool.pairs(trials, 'spiral', 'reactive') == [(trials[0], trials[3])]
    assert tool.pairs(trials, 'spiral', 'none') == [(trials[0], trials[2])]
    assert tool.pairs(trials, 'spiral', 'explore') == []


def test_the_sign_test_is_exact_and_two_sided():
    tool = load_tool('paired_strategies')
    assert tool.sign_test(0, 0) == 1.0
    assert tool.sign_test(3, 6) == 1.0                       # an even split says nothing
    assert tool.sign_test(0, 5) == pytest.approx(2.0 / 32)  # 5-0 either way: 2 of 32
    assert tool.sign_test(5, 5) == tool.sign_test(0, 5)
    assert tool.sign_test(3, 12) == pytest.approx(2.0 * (1 + 12 + 66 + 220) / 4096)


def test_the_report_counts_per_run_and_over_all_runs(tmp_path):
    tool = load_tool('paired_strategies')
    one = write_run(tmp_path / 'willow', [
        trial('spiral', 0, False, need_help=True), trial('reactive', 0, True, 40.0),
        trial('spiral', 1, True, 10.0), trial('reactive', 1, True, 20.0),
        trial('spiral', 2, True, 3.0, collisions=1), trial('reactive', 2, False, 90.0),
        trial('none', 0, False)])
    two = write_run(tmp_path / 'intel', [
        trial('spiral', 0, False, need_help=True), trial('reactive', 0, False, need_help=True),
        trial('spiral', 1, True, 5.0), trial('reactive', 1, True, 7.0)])
    lines = tool.report([one, two], 'spiral', 'reactive').splitlines()
    assert '`spiral` / `reactive`' in lines[0]
    # Medians over the pairs both recovered (trials 1 and 2 of willow: 10, 3 / 20, 90).
    assert lines[2] == '| willow | 3 | 2 / 2 | 1 / 1 | 1 / 0 | 1 / 0 | 6.5 / 55.0 (2) |'
    assert lines[3] == '| intel | 2 | 1 / 1 | 0 / 0 | 1 / 1 | 0 / 0 | 5.0 / 7.0 (1) |'
    assert lines[4] == '| all | 5 | 3 / 3 | 1 / 1 | 2 / 1 | 1 / 0 | 5.0 / 20.0 (3) |'
    assert lines[-1].startswith('Resumed by one strategy only: `spiral` 1, `reactive` 1; ')
    assert lines[-1].endswith('p = 1.')


def test_bad_strategies_or_folders_are_refused(tmp_path):
    tool = load_tool('paired_strategies')
    with pytest.raises(SystemExit):
        tool.main(['--strategies', 'spiral', str(tmp_path)])
    with pytest.raises(SystemExit):
        tool.main(['--strategies', 'spiral,spiral', str(tmp_path)])
    with pytest.raises(SystemExit, match='cannot read'):
        tool.main([str(tmp_path)])


def kidnap(strategy, index, resumed, recover=None, put_down=(1.0, 2.0, 0.5), start=(0, 0, 0),
           goal_end_error=None, **rest):
    record = trial(strategy, index, resumed, recover, **rest)
    record.update(put_down=list(put_down), start=list(start), goal=[4.0, 4.0, 0.0])
    if goal_end_error is not None:
        record['goal_end_error'] = goal_end_error
    return record


def test_two_runs_pair_each_strategy_with_itself_on_the_same_kidnaps(tmp_path):
    tool = load_tool('paired_strategies')
    before = write_run(tmp_path / 'before', [
        kidnap('spiral', 0, True, 12.0), kidnap('spiral', 1, False, need_help=True),
        kidnap('reactive', 0, True, 9.0), kidnap('reactive', 1, True, 30.0),
        kidnap('spiral', 2, True, 4.0)])
    after = write_run(tmp_path / 'after', [
        kidnap('spiral', 0, True, 6.0), kidnap('spiral', 1, True, 50.0, put_down=(2, 2, 0.5)),
        kidnap('reactive', 0, True, 5.0), kidnap('reactive', 1, False, collisions=1)])
    paired = tool.pairs_across(json.loads((tmp_path / 'before' / 'recovery.json').read_text())
                               ['trials'], json.loads((tmp_path / 'after' / 'recovery.json')
                                                      .read_text())['trials'])
    assert sorted(paired) == ['reactive', 'spiral']
    assert [(a['index'], b['index']) for a, b in paired['spiral']] == [(0, 0), (1, 1)]
    lines = tool.report_across([before], [after]).splitlines()
    assert lines[2] == '| after | `reactive` | 2 | 2 / 1 | 1 / 0 | 0 / 0 | 0 / 1 | 9.0 / 5.0 (1) |'
    assert lines[3] == '| after | `spiral` | 2 | 1 / 2 | 0 / 1 | 1 / 0 | 0 / 0 | 12.0 / 6.0 (1) |'
    assert lines[4] == '| all | | 4 | 3 / 3 | 1 / 1 | 1 / 0 | 0 / 1 | 10.5 / 5.5 (2) |'
    assert lines[-1].startswith('Resumed by one run only: before 1, after 1; ')
    assert lines[-1].endswith('Put down at different places (drawn again near the lift): 1 of '
                              'the 4 pairs.')


def test_two_runs_of_different_trials_or_folder_counts_are_refused(tmp_path):
    tool = load_tool('paired_strategies')
    before = write_run(tmp_path / 'before', [kidnap('spiral', 0, True, 5.0)])
    after = write_run(tmp_path / 'after', [kidnap('spiral', 0, True, 5.0, start=(3, 2, 0))])
    with pytest.raises(SystemExit, match='spiral trial 0: start'):
        tool.main(['--before', before, after])
    with pytest.raises(SystemExit):
        tool.main(['--before', before + ',' + before, after])


def traced(record, put_down_sim, localized_at):
    """``record`` put down at ``put_down_sim`` with a 1 Hz-like trace: LOST, then IDLE at
    ``localized_at`` s after the put-down."""
    record['t_put_down_sim'] = put_down_sim
    record['trace'] = [[0.5, 0.0, 0.0, 0.0, 5.0, 1.0, 'LOST'],
                       [localized_at, 0.0, 0.0, 0.0, 0.1, 0.0, 'IDLE'],
                       [localized_at + 20.0, 0.0, 0.0, 0.0, 0.1, 0.0, 'NAVIGATING']]
    return record


def test_two_runs_report_the_pairs_in_which_either_approached_a_tag(tmp_path):
    from recovery_run_files import write_run as write_logged_run
    tool = load_tool('paired_strategies')
    seen = 'tag 3 seen 4.0 m away, too far, oblique or noisy to localize from: ...'
    (tmp_path / 'before').mkdir()
    (tmp_path / 'after').mkdir()
    # Trial 0 approached in both runs, trial 1 in the second only, trial 2 in neither.
    write_logged_run(tmp_path / 'before', [
        traced(kidnap('spiral', 0, True, 20.0), 100.0, 20.0),
        traced(kidnap('spiral', 1, True, 5.0), 300.0, 5.0),
        traced(kidnap('spiral', 2, True, 2.0), 500.0, 2.0)], [(101.0, seen)])
    write_logged_run(tmp_path / 'after', [
        traced(kidnap('spiral', 0, True, 8.0), 100.0, 8.0),
        traced(kidnap('spiral', 1, True, 9.0), 300.0, 9.0),
        traced(kidnap('spiral', 2, True, 1.0), 500.0, 1.0)], [(101.0, seen), (302.0, seen)])
    lines = tool.report_across([str(tmp_path / 'before')], [str(tmp_path / 'after')],
                               approaches=True).splitlines()
    # Differences -12 and +4: median -4.
    assert lines[-3] == ('Pairs in which either run approached a distant tag: 2 (approached '
                         'before 1, after 2); goal resumed before / after 2 / 2; over the 2 '
                         'both recovered, median time to recover 12.5 / 8.5 s, median of the '
                         'differences (after - before) -4.0 s, after sooner in 1.')
    assert lines[-1] == ('Pairs in which either run left its first turn for a distant tag: 0 '
                         '(left before 0, after 0); goal resumed before / after 0 / 0.')
    assert 'approached' not in tool.report_across([str(tmp_path / 'before')],
                                                  [str(tmp_path / 'after')])


def test_two_runs_report_the_pairs_whose_first_turn_was_left_for_a_tag(tmp_path):
    from recovery_run_files import write_run as write_logged_run
    tool = load_tool('paired_strategies')
    cut = ('tag 3 seen 4.0 m away, too far, oblique or noisy to localize from: going to 2.2 m '
           'from it, (1.00, 2.00) in odom (at most 30 s); the spin cut short with %.1f s of it '
           'left')
    (tmp_path / 'before').mkdir()
    (tmp_path / 'after').mkdir()
    trials = [(0, 100.0, 9.0, 6.0), (1, 300.0, 5.0, 4.0), (2, 500.0, 2.0, 2.0)]
    write_logged_run(tmp_path / 'before', [
        traced(kidnap('spiral', i, True, before), put, before)
        for i, put, before, _after in trials], [])
    # Trial 0 left its first turn 1.5 s after the put-down; trial 1 cut a spin 12 s after it
    # (a later spin, not the first turn); trial 2 none.
    write_logged_run(tmp_path / 'after', [
        traced(kidnap('spiral', i, True, after), put, after)
        for i, put, _before, after in trials], [(101.5, cut % 3.5), (312.0, cut % 2.0)])
    lines = tool.report_across([str(tmp_path / 'before')], [str(tmp_path / 'after')],
                               approaches=True).splitlines()
    assert lines[-1] == ('Pairs in which either run left its first turn for a distant tag: 1 '
                         '(left before 0, after 1); goal resumed before / after 1 / 1; over the '
                         '1 both recovered, median time to recover 9.0 / 6.0 s, median of the '
                         'differences (after - before) -3.0 s, after sooner in 1.')
    # Both are approaches.
    assert lines[-3].startswith('Pairs in which either run approached a distant tag: 2 '
                                '(approached before 0, after 2)')


def test_two_runs_say_where_the_robot_stopped_when_both_recorded_it(tmp_path):
    tool = load_tool('paired_strategies')
    before = write_run(tmp_path / 'before', [
        kidnap('spiral', 0, True, 5.0, goal_end_error=0.25),
        kidnap('spiral', 1, True, 5.0, goal_end_error=0.28),
        kidnap('spiral', 2, False, goal_end_error=0.9),          # not resumed: left out
        kidnap('reactive', 0, True, 5.0, goal_end_error=0.26)])
    after = write_run(tmp_path / 'after', [
        kidnap('spiral', 0, True, 4.0, goal_end_error=0.31),
        kidnap('spiral', 1, True, 4.0, goal_end_error=0.27),
        kidnap('spiral', 2, True, 4.0, goal_end_error=0.2),
        kidnap('reactive', 0, True, 4.0)])                       # not recorded: left out
    lines = tool.report_across([before], [after]).splitlines()
    assert lines[-1] == ('Where the robot stopped when the errand ended (both resumed the goal, '
                         '2 pairs): median 0.265 / 0.290 m from the goal before / after, median '
                         'of the differences +0.025 m, farther after in 1; over 0.3 m 0 / 1.')
    assert tool.stop_summary([]) is None
