"""tools/search_budget.py: the LOST episodes a shorter search budget would have cut."""
import json

import pytest

from tool_loader import load_tool


def trial(strategy, states, resumed):
    return {'strategy': strategy, 'states': states, 'resumed': resumed}


def test_episodes_run_from_lost_to_the_first_state_that_is_not_a_search():
    tool = load_tool('search_budget')
    states = [[-2.7, 'FLYING'], [0.1, 'LOST'], [50.0, 'LOCALIZING'], [52.0, 'LOST'],
              [130.0, 'LOCALIZING'], [132.0, 'IDLE'], [140.0, 'LOST']]
    assert tool.episodes(states, 180.0) == [
        (0.1, 132.0, 'IDLE', [(0.1, 50.0), (52.0, 130.0)]),
        (140.0, None, None, [(140.0, 180.0)])]
    assert tool.episodes([[0.0, 'LOCALIZING'], [1.0, 'IDLE']]) == []


def test_an_episode_is_cut_when_it_is_lost_after_the_budget():
    tool = load_tool('search_budget')
    # In LOCALIZING across the budget, confirmed: the node waits for the verdict, not cut.
    waited = tool.episodes([[0.0, 'LOST'], [119.0, 'LOCALIZING'], [123.0, 'IDLE']])[0]
    assert not tool.is_cut(waited, 120.0)
    # The fix refuted after the budget: LOST again, help asked for then.
    refuted = tool.episodes([[0.0, 'LOST'], [119.0, 'LOCALIZING'], [123.0, 'LOST'],
                             [150.0, 'IDLE']])[0]
    assert tool.is_cut(refuted, 120.0) and not tool.is_cut(refuted, 160.0)
    # A record that ends while searching: cut when it ends after the budget, and when its end
    # is unknown.
    assert tool.is_cut(tool.episodes([[10.0, 'LOST']], 131.0)[0], 120.0)
    assert not tool.is_cut(tool.episodes([[10.0, 'LOST']], 129.0)[0], 120.0)
    assert tool.is_cut(tool.episodes([[10.0, 'LOST']])[0], 1000.0)


def test_the_report_counts_how_each_trials_cut_search_ended(tmp_path):
    tool = load_tool('search_budget')
    run = {'trials': [
        trial('spiral', [[0.0, 'LOST'], [134.0, 'LOCALIZING'], [136.0, 'IDLE'],
                         [136.1, 'NAVIGATING']], True),                     # found late: resumed
        trial('spiral', [[0.0, 'LOST'], [165.0, 'NEED_HELP']], False),     # help, later
        trial('spiral', [[0.0, 'LOST'], [30.0, 'IDLE']], True),            # not cut
        # Found late, then lost again briefly and found: the trial's goal was resumed only
        # thanks to the longer budget, so the first cut search counts as resumed.
        trial('spiral', [[0.0, 'LOST'], [125.0, 'IDLE'], [140.0, 'LOST'],
                         [150.0, 'IDLE']], True),
        # Two cut searches in one trial: only the first counts (with 120 s the trial ended
        # there).
        trial('spiral', [[0.0, 'LOST'], [130.0, 'IDLE'], [140.0, 'LOST'],
                         [300.0, 'NEED_HELP']], False),
        trial('reactive', [[5.0, 'LOST']], False),                        # record ended...
        trial('reactive', [[0.0, 'LOST'], [30.0, 'IDLE'], [96.0, 'LOST']], False),
        trial('reactive', [[0.0, 'LOST'], [150.0, 'FLYING']], False)]}     # lifted mid-search
    run['trials'][-3]['trace'] = [[0.0, 'LOST'], [180.0, 'LOST']]     # ...175 s in: cut
    run['trials'][-2]['trace'] = [[0.0, 'LOST'], [180.0, 'LOST']]     # 84 s in: not cut
    (tmp_path / 'recovery.json').write_text(json.dumps(run))
    lines = tool.report([str(tmp_path)], 120.0).splitlines()
    assert 'search cut by a 120 s budget' in lines[0]
    assert lines[2].endswith('| `spiral` | 5 | 4 | 2 | 1 | 1 | 0 | 136, 165, 125, 130 |')
    assert lines[3] == '|  | `reactive` | 3 | 2 | 0 | 0 | 0 | 2 | -, 150 (FLYING) |'


def test_a_bad_budget_or_folder_is_refused(tmp_path):
    tool = load_tool('search_budget')
    with pytest.raises(SystemExit):
        tool.main(['--budget', '0', str(tmp_path)])
    with pytest.raises(SystemExit, match='cannot read'):
        tool.main([str(tmp_path)])
