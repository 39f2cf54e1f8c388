"""Map loading in map_server format: thresholds, negate, origin yaw, round trip, real maps."""
import glob
import math
import os

import numpy as np
import pytest
import yaml
from PIL import Image

from lost_and_found.sim.gridmap import GridMap, MapError, load_map, save_map

SHARED_MAPS = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'shared', 'data', 'maps')


def write_map(tmp_path, pixels, **meta):
    Image.fromarray(np.asarray(pixels, dtype=np.uint8)).save(str(tmp_path / 'm.pgm'))
    data = {'image': 'm.pgm', 'resolution': 0.5, 'origin': [0.0, 0.0, 0.0], 'negate': 0,
            'occupied_thresh': 0.65, 'free_thresh': 0.196}
    data.update(meta)
    (tmp_path / 'm.yaml').write_text(yaml.safe_dump(data))
    return str(tmp_path / 'm.yaml')


def test_thresholds_and_bottom_up_rows(tmp_path):
    # image top row: black (occupied), middle: grey 205 (unknown), bottom: white (free)
    grid = load_map(write_map(tmp_path, [[0, 0], [205, 205], [254, 254]]))
    assert grid.shape == (3, 2)
    assert grid.free[0].all() and grid.occupied[2].all()
    assert grid.unknown[1].all()


def test_negate_swaps_black_and_white(tmp_path):
    grid = load_map(write_map(tmp_path, [[0, 255]], negate=1))
    assert grid.free[0, 0] and grid.occupied[0, 1]


def test_thresholds_are_read(tmp_path):
    # p = (255 - 128) / 255 = 0.498: unknown by default, occupied with occupied_thresh 0.4
    path = write_map(tmp_path, [[128]])
    assert load_map(path).unknown[0, 0]
    assert load_map(write_map(tmp_path, [[128]], occupied_thresh=0.4)).occupied[0, 0]


def test_origin_and_cell_centres_without_yaw(tmp_path):
    grid = load_map(write_map(tmp_path, np.full((4, 6), 254), origin=[-1.0, 2.0, 0.0]))
    x, y = grid.cell_center(0, 0)
    assert (float(x), float(y)) == (-0.75, 2.25)
    rows, cols = grid.cell_index(np.array([-0.9, 1.9]), np.array([2.1, 3.9]))
    assert rows.tolist() == [0, 3] and cols.tolist() == [0, 5]
    assert grid.is_free(-0.9, 2.1) and not grid.is_free(-1.1, 2.1)


def test_origin_yaw_rotates_the_grid():
    occupied = np.zeros((2, 4), dtype=bool)
    occupied[0, 3] = True                      # the cell 3.5 res along the grid's x axis
    grid = GridMap.from_occupancy(occupied, 1.0, (1.0, 1.0, math.pi / 2))
    x, y = grid.cell_center(0, 3)
    assert float(x) == pytest.approx(1.0 - 0.5) and float(y) == pytest.approx(1.0 + 3.5)
    assert grid.is_occupied(0.5, 4.5) and not grid.is_occupied(4.5, 1.5)
    gx, gy = grid.to_grid(*grid.to_world(2.25, 1.75))
    assert (float(gx), float(gy)) == pytest.approx((2.25, 1.75))


def test_distance_field():
    occupied = np.zeros((5, 5), dtype=bool)
    occupied[2, 2] = True
    grid = GridMap.from_occupancy(occupied, 0.1)
    assert grid.distance_field()[2, 4] == pytest.approx(0.2)
    assert float(grid.distance_at(0.05, 0.05)) == pytest.approx(math.hypot(0.2, 0.2))


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    occupied = rng.random((7, 9)) < 0.2
    free = ~occupied & (rng.random((7, 9)) < 0.8)
    grid = GridMap(occupied, free, 0.05, (1.5, -2.0, 0.0))
    save_map(grid, str(tmp_path / 'r.yaml'))
    back = load_map(str(tmp_path / 'r.yaml'))
    assert np.array_equal(back.occupied, grid.occupied)
    assert np.array_equal(back.free, grid.free)
    assert back.resolution == 0.05 and back.origin == (1.5, -2.0, 0.0)


@pytest.mark.parametrize('meta,fragment', [
    ({'resolution': -1}, 'resolution=-1'),
    ({'origin': [0, 0]}, 'origin=[0, 0]'),
    ({'negate': 2}, 'negate=2'),
    ({'free_thresh': 0.9}, 'free_thresh=0.9'),
    ({'mode': 'fancy'}, "mode='fancy'"),
    ({'image': 'missing.pgm'}, 'missing.pgm'),
])
def test_bad_yaml_values_are_named(tmp_path, meta, fragment):
    with pytest.raises(MapError, match=fragment.replace('[', r'\[').replace(']', r'\]')):
        load_map(write_map(tmp_path, [[254]], **meta))


def test_every_shared_map_loads():
    paths = sorted(glob.glob(os.path.join(SHARED_MAPS, '*', '*.yaml')))
    if not paths:
        pytest.skip('../shared/data/maps is absent: real maps not checked')
    for path in paths:
        grid = load_map(path)
        assert grid.free.sum() > 1000, path
        assert grid.occupied.sum() > 100, path
