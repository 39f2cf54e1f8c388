"""tools/clutter_map.py: small blobs standing alone on open floor, the same for the same seed."""
import math

import numpy as np

from lost_and_found.sim.gridmap import GridMap, load_map
from tool_loader import load_tool

RES = 0.05


def room(size=200):
    """A 10 m square of known-free floor inside a wall one cell thick."""
    occupied = np.zeros((size, size), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    return GridMap(occupied, ~occupied, RES, (0.0, 0.0, 0.0))


def test_blobs_stand_alone_on_open_floor_apart_from_each_other():
    tool = load_tool('clutter_map')
    grid = room()
    cluttered, blobs = tool.add_blobs(grid, seed=3, attempts=30)
    assert 10 <= len(blobs) <= 30
    image = cluttered.occupied[::-1]
    added = int(image.sum() - grid.occupied.sum())
    assert added == sum(side * side for _, _, side in blobs)
    reach = int(math.ceil(0.5 / RES))
    for i, (r, c, side) in enumerate(blobs):
        assert side in (2, 3, 4) and image[r:r + side, c:c + side].all()
        # The 0.5 m around the corner cell was free floor: no wall within it.
        assert reach <= r < 200 - reach - 1 and reach <= c < 200 - reach - 1
        for r2, c2, _ in blobs[i + 1:]:
            assert math.hypot(r - r2, c - c2) * RES >= 1.2
    assert not (cluttered.free & cluttered.occupied).any()


def test_the_same_seed_gives_the_same_map_and_another_seed_another():
    tool = load_tool('clutter_map')
    a = tool.add_blobs(room(), seed=5, attempts=10)
    b = tool.add_blobs(room(), seed=5, attempts=10)
    c = tool.add_blobs(room(), seed=6, attempts=10)
    assert a[1] == b[1] and np.array_equal(a[0].occupied, b[0].occupied)
    assert a[1] != c[1]


def test_no_open_floor_places_nothing():
    tool = load_tool('clutter_map')
    narrow = np.zeros((12, 200), dtype=bool)      # a corridor 0.6 m wide: no 0.5 m disc fits
    narrow[0, :] = narrow[-1, :] = True
    grid = GridMap(narrow, ~narrow, RES, (0.0, 0.0, 0.0))
    cluttered, blobs = tool.add_blobs(grid, seed=1, attempts=5)
    assert blobs == [] and np.array_equal(cluttered.occupied, grid.occupied)
    unknown = GridMap(np.zeros((50, 50), dtype=bool), np.zeros((50, 50), dtype=bool), RES,
                      (0.0, 0.0, 0.0))
    assert tool.add_blobs(unknown, seed=1, attempts=5)[1] == []


def test_the_command_writes_a_map_that_loads_and_names_a_bad_input(tmp_path, capsys):
    from lost_and_found.sim.gridmap import save_map
    tool = load_tool('clutter_map')
    save_map(room(), str(tmp_path / 'room.yaml'))
    out = tmp_path / 'deeper' / 'room_clutter.yaml'
    assert tool.main([str(tmp_path / 'room.yaml'), str(out), '--attempts', '8']) == 0
    assert '8 blobs placed of 8 tried (seed 7)' in capsys.readouterr().out
    assert load_map(str(out)).occupied.sum() > room().occupied.sum()
    assert tool.main([str(tmp_path / 'missing.yaml'), str(out)]) == 2
    assert 'missing.yaml' in capsys.readouterr().err
