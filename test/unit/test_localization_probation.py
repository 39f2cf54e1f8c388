"""tools/localization_probation.py: how the detector read after each localization of a run."""
import json

import pytest

from tool_loader import load_tool

HEAD = ' INFO /x [x.py:1(f)] [topics: /a] '


def _tool():
    return load_tool('localization_probation')


def test_runs_of_doubt_are_measured_and_cut_where_the_probation_ends():
    tool = _tool()
    readings = [(11.0, 'confused'), (12.0, 'lost'), (14.0, 'normal'), (20.0, 'confused'),
                (21.0, 'normal'), (30.0, 'confused')]
    # Confused 11-14 (through lost), 20-21, and 30 until the window ends at 40.
    assert tool.doubt_after(10.0, 30.0, readings, []) == pytest.approx((30.0, 10.0, 14.0))
    # Cut at 13 (a fix, or the robot leaving the localized states): 2 s of doubt so far.
    assert tool.doubt_after(10.0, 30.0, readings, [5.0, 13.0]) == pytest.approx((3.0, 2.0, 2.0))
    # Readings from before the localization do not count.
    assert tool.doubt_after(13.5, 5.0, readings, []) == pytest.approx((5.0, 0.0, 0.0))


def test_localizations_are_judged_and_counted_by_kind(tmp_path):
    tool = _tool()
    # Trial 0: localized on amcl alone at 105 (6 m off), the detector confused 106-111 (5 s);
    # then a fix at 120 and localized after it at 122 (right), no doubt after it.
    trace = [[1.0, 0, 0, 0, 5.0, 1.0, 'LOST'], [5.0, 0, 0, 0, 6.0, 1.0, 'IDLE'],
             [20.0, 0, 0, 0, 0.1, 0.0, 'LOCALIZING'], [22.0, 0, 0, 0, 0.1, 0.0, 'IDLE'],
             [90.0, 0, 0, 0, 0.1, 0.0, 'NAVIGATING']]
    (tmp_path / 'recovery.json').write_text(json.dumps({'trials': [
        {'strategy': 'spiral', 'index': 0, 't_put_down_sim': 100.0, 'trace': trace}]}))
    log = tmp_path / 'logs' / 'recovery' / 'x'
    log.mkdir(parents=True)
    lines = [
        (105.0, 'state LOST -> IDLE: 8 tight poses in a row with the detector normal: '
                'localized'),
        (106.0, '/lost_detector: normal -> confused (sigma_xy 0.1 m)'),
        (111.0, '/lost_detector: confused -> normal (sigma_xy 0.1 m)'),
        (115.0, '/lost_detector: normal -> confused (sigma_xy 0.1 m)'),
        (116.0, '/lost_detector: reset (confused -> normal)'),
        (118.0, 'state NAVIGATING -> LOST: the lost detector reached tier 2'),
        (120.0, 'pose fix on initialpose from /fiducial_localizer'),
        (122.0, 'state LOCALIZING -> IDLE: 8 tight poses in a row with the detector normal: '
                'localized'),
    ]
    (log / 'rosout.log').write_text(''.join('%s%s%s\n' % (t, HEAD, text) for t, text in lines))
    rows = tool.localizations(str(tmp_path), 60.0)
    assert [(r[0], r[2]) for r in rows] == [(0, 'alone'), (0, 'fix')]
    assert rows[0][3] == pytest.approx(6.0) and rows[1][3] == pytest.approx(0.1)
    assert rows[0][4:] == pytest.approx((13.0, 5.0, 6.0))       # watched until 118
    assert rows[1][4:] == pytest.approx((60.0, 0.0, 0.0))
    text = '\n'.join(tool.report([str(tmp_path)], 60.0))
    assert "| on amcl's poses alone | wrong | 1 | 0 | 1 | 1 | 1 | 1 | 0 |" in text
    assert '| after a pose fix | right | 1 | 1 | 0 | 0 | 0 | 0 | 0 |' in text
