"""tools/panorama_match.py: the panorama fix offline, on put-downs in a small room."""
import pytest

from lost_and_found.sim.gridmap import save_map
from test_bench_oracle import box_map
from tool_loader import load_tool

FIDUCIALS = '''frame_id: map
fiducials:
  - {id: 3, position: [0.12, 1.0, 0.3], facing_yaw: 0.0}
'''


@pytest.fixture(name='room')
def room_fixture(tmp_path):
    """A 10 x 6 m room no turn can mistake for itself turned round: a wall half across it at
    x = 4 m, a pillar in the east half; one tag on the west wall."""
    grid = box_map(10.0, 6.0, walls=[(3.9, 0.0, 4.1, 3.5), (7.0, 4.0, 8.0, 5.0)])
    save_map(grid, str(tmp_path / 'room.yaml'))
    (tmp_path / 'tags.yaml').write_text(FIDUCIALS)
    return str(tmp_path / 'room.yaml'), str(tmp_path / 'tags.yaml')


def _rows(text, header):
    """The data rows of the Markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith('|'):
            break
        rows.append([cell.strip() for cell in line.strip('|').split('|')])
    return rows


def test_every_fix_in_an_asymmetric_room_is_right(room, capsys):
    tool = load_tool('panorama_match')
    room_map, tags = room
    assert tool.main([room_map, '--fiducials', tags, '--poses', '6', '--seed', '3', '--all',
                      '--parts', '180']) == 0
    out = capsys.readouterr().out
    (row,) = _rows(out, '| put-downs')
    assert row[0] == '6'
    fixes, right = int(row[4].split()[0]), int(row[5].split()[0])
    assert fixes >= 1 and right == fixes
    assert row[6] != '-' and float(row[6]) >= 0.5     # the best score's median
    assert row[7] == '-'                                # no wrong place stood alone
    (part,) = _rows(out, '| body turn')
    assert part[0] == '180'
    assert 0.5 <= float(part[2]) < 1.0      # half a turn looks at more than half the headings
    assert int(part[4]) == 0 and int(part[6]) == 0      # no wrong fix from half a turn


def test_a_plain_rectangle_gives_no_fix(room, tmp_path, capsys):
    # Turned half round, every place of a bare room has a twin that scores alike.
    tool = load_tool('panorama_match')
    _room_map, tags = room
    save_map(box_map(10.0, 6.0), str(tmp_path / 'plain.yaml'))
    assert tool.main([str(tmp_path / 'plain.yaml'), '--fiducials', tags, '--poses', '6',
                      '--seed', '3', '--all']) == 0
    (row,) = _rows(capsys.readouterr().out, '| put-downs')
    assert row[0] == '6' and row[2].startswith('0 ') and row[4].startswith('0 ')


@pytest.mark.parametrize('parts', ['400', 'half', '0'])
def test_bad_parts_are_refused_with_the_value(room, parts):
    tool = load_tool('panorama_match')
    room_map, tags = room
    with pytest.raises(SystemExit, match='--parts'):
        tool.main([room_map, '--fiducials', tags, '--parts', parts])


def test_a_missing_map_is_refused_by_name(room, tmp_path):
    tool = load_tool('panorama_match')
    _room_map, tags = room
    with pytest.raises(SystemExit, match='panorama_match: .*nowhere.yaml'):
        tool.main([str(tmp_path / 'nowhere.yaml'), '--fiducials', tags])
